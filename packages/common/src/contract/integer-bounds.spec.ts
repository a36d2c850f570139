import { describe, expect, it } from '@jest/globals';
import { Kind, type TSchema } from '@sinclair/typebox';
import { API } from './endpoints';
import { JSON_DOCUMENT_KIND } from './json-document';

/** PostgreSQL's `integer`: what a request's integers are stored in, or compared with, unless listed below. */
const INTEGER_MAX = 2 ** 31 - 1;
/**
 * The integers that never meet an `integer` column: milliseconds kept as `bigint` (a schedule's interval, a
 * workflow's retention) or only added to a time (`now() + delay * interval '1 millisecond'`, a float8).
 */
const WIDER_FIELDS = new Set(['delayMs', 'retryDelayMs', 'timeoutMs', 'intervalMs', 'retentionMs']);

/** Every number a request may carry, by its path (`createSchedule.body.intervalMs`), with its schema. */
function numbersOf(schema: TSchema | undefined, path: string): [string, TSchema][] {
  if (!schema || schema[Kind] === JSON_DOCUMENT_KIND) return [];
  if (schema.type === 'integer' || schema.type === 'number') return [[path, schema]];
  const inner: [string, TSchema][] = [
    ...Object.entries((schema.properties ?? {}) as Record<string, TSchema>).map(([key, property]): [string, TSchema] => [`${path}.${key}`, property]),
    ...Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>).map((item): [string, TSchema] => [`${path}.*`, item]),
    ...((schema.anyOf ?? []) as TSchema[]).map((variant): [string, TSchema] => [path, variant]),
    ...(schema.items ? [[`${path}[]`, schema.items as TSchema] as [string, TSchema]] : []),
  ];
  return inner.flatMap(([at, item]) => numbersOf(item, at));
}

const numbers = Object.entries(API).flatMap(([name, endpoint]) =>
  (['params', 'query', 'body'] as const).flatMap((part) => numbersOf((endpoint as Partial<Record<typeof part, TSchema>>)[part], `${name}.${part}`)),
);

describe('the numbers a request carries', () => {
  it('are found in the contract (the walk reaches the worker protocol, its report batches included)', () => {
    expect(numbers.map(([path]) => path)).toEqual(
      expect.arrayContaining([
        'suspendRun.body.expectedRevision',
        'report.body.reports[].task.durationMs',
        'listRuns.query.limit',
        'setWorkflowLimits.body.ratePerSecond',
      ]),
    );
  });

  it.each(numbers)('%s is bounded within the column it reaches', (path, schema) => {
    const field = path.split('.').at(-1) as string;
    const maximum = WIDER_FIELDS.has(field) ? Number.MAX_SAFE_INTEGER : INTEGER_MAX;
    expect({ path, minimum: schema.minimum ?? schema.exclusiveMinimum, maximum: schema.maximum }).toEqual({
      path,
      minimum: expect.any(Number),
      maximum: expect.any(Number),
    });
    expect(schema.minimum ?? schema.exclusiveMinimum).toBeGreaterThanOrEqual(-INTEGER_MAX - 1);
    expect(schema.maximum).toBeLessThanOrEqual(maximum);
  });

  it('take no expectedRevision that a write could not follow (its revision + 1 is still an integer)', () => {
    const revisions = numbers.filter(([path]) => path.endsWith('.expectedRevision'));
    expect(new Set(revisions.map(([path]) => path.split('.')[0]))).toEqual(
      new Set([
        'heartbeat',
        'recordTask',
        'report',
        'completeRun',
        'failRun',
        'suspendRun',
        'startChild',
        'waitGroup',
        'releaseRun',
        'createCompletionToken',
        'recordUpdates',
      ]),
    );
    for (const [path, schema] of revisions) expect({ path, maximum: schema.maximum }).toEqual({ path, maximum: INTEGER_MAX - 1 });
  });
});
