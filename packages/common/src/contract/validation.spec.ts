import { describe, expect, it } from '@jest/globals';
import { Type } from '@sinclair/typebox';
import { API } from './endpoints';
import { InvalidRequestError } from '../errors/engine.errors';
import { JSON_MAX_BYTES } from './json-document';
import { openApiDocument } from './openapi-document';
import { ListRunsQuery, StartRunRequest } from './run.contracts';
import { decode, decodeQuery, parseIdentifier, parseRunId } from './validation';
import { ClaimRequest, parseReportsRequest, SuspendRequest, TakeRunsRequest, TaskResultRequest } from './worker.contracts';

const RUN = '01A22C37-316C-762F-A717-4521456009DF';

/** The reason and message `decode` refuses `value` with. */
function refusal(schema: Parameters<typeof decode>[0], value: unknown): { reason: string; message: string } {
  try {
    decode(schema, value, 'request body');
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    const { reason, message } = error as InvalidRequestError;
    return { reason, message };
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

const start = (fields: object) => ({ workflow: 'echo', version: '1', ...fields });
const task = (fields: object) => ({ expectedRevision: 1, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, ...fields });

describe('contract validation', () => {
  describe('JSON documents', () => {
    it.each([
      ['a NUL in a string', { a: 'x\u0000y' }, 'json_nul_character'],
      ['a NUL in a key', { 'a\u0000': 1 }, 'json_nul_character'],
      ['a NUL after an escaped backslash', ['\\\u0000'], 'json_nul_character'],
      ['a lone high surrogate', ['x\ud800'], 'json_invalid_unicode'],
      ['a lone low surrogate in a key', { '\udfff': 1 }, 'json_invalid_unicode'],
      ['a document one byte over the limit', 'x'.repeat(JSON_MAX_BYTES - 1), 'input_too_large'],
    ])('refuses %s', (_name, input, reason) => {
      expect(refusal(StartRunRequest, start({ input })).reason).toBe(reason);
    });

    it.each([
      ['the text \\u0000 (a backslash, then u0000)', { a: '\\u0000', b: '\\\\ud800' }],
      ['a surrogate pair', '\ud83d\ude00'],
      ['a document of exactly the limit', 'x'.repeat(JSON_MAX_BYTES - 2)],
      ['control characters other than NUL', '\u0001\n\u007f'],
    ])('accepts %s', (_name, input) => {
      expect(decode(StartRunRequest, start({ input }), 'request body').input).toEqual(input);
    });

    it('names the document where it lies', () => {
      const body = { reports: [{ type: 'complete', runId: RUN, complete: { expectedRevision: 1, output: 'a\u0000' } }] };
      expect(() => parseReportsRequest(body)).toThrow('reports[0].complete.output contains a NUL character');
    });
  });

  describe('the first problem of a refused value', () => {
    it('is an unknown field before a missing one', () => {
      expect(refusal(StartRunRequest, { version: '1', inptu: 1 })).toEqual({ reason: 'unknown_field', message: 'request body has unknown field(s): inptu' });
    });

    it('is the first field, in the order the schema declares them, missing or wrong', () => {
      expect(refusal(StartRunRequest, { version: 'bad version' }).reason).toBe('invalid_workflow');
      expect(refusal(StartRunRequest, { workflow: 'a:b', version: 'bad version' }).reason).toBe('invalid_workflow');
      expect(refusal(StartRunRequest, start({ priority: 1.5, runAt: 'tomorrow' })).reason).toBe('invalid_priority');
    });

    it('in a union with a discriminator: unknown fields, then the discriminator, then the variant it names', () => {
      expect(refusal(TaskResultRequest, task({ status: 'done', colour: 1 })).reason).toBe('unknown_field');
      expect(refusal(TaskResultRequest, task({ status: 'done' }))).toEqual({ reason: 'invalid_status', message: 'status must be one of completed, failed' });
      expect(refusal(TaskResultRequest, task({ status: 'failed' })).reason).toBe('invalid_error');
      expect(refusal(TaskResultRequest, task({ status: 'failed', error: { message: 'm', code: 1 } })).reason).toBe('unknown_field');
      expect(refusal(TaskResultRequest, task({ status: 'failed', error: { message: 'm\u0000' } })).reason).toBe('json_nul_character');
      expect(refusal(TaskResultRequest, task({ status: 'completed', error: { message: 'm' } })).reason).toBe('invalid_error');
      expect(refusal(SuspendRequest, { expectedRevision: 1, key: 'k', seq: 0, kind: 'nap', name: 'n', delayMs: 1 }).reason).toBe('invalid_kind');
      expect(refusal(SuspendRequest, { expectedRevision: 1, key: 'k', seq: 0, kind: 'event', name: 'not:an:identifier' }).reason).toBe('invalid_name');
      expect(refusal(SuspendRequest, { expectedRevision: 1, key: 'k', seq: 0, kind: 'sleep', name: 'n', delayMs: null }).reason).toBe('invalid_delayMs');
    });

    it('in an array: its length, then its items, named by their index', () => {
      expect(refusal(ClaimRequest, { workerId: 'w', workflows: [], limit: 1 }).reason).toBe('invalid_workflows');
      expect(refusal(ClaimRequest, { workerId: 'w', workflows: [{ name: 'e', version: '1' }, 7], limit: 1 })).toEqual({
        reason: 'invalid_body',
        message: 'workflows[1] must be a JSON object',
      });
      expect(refusal(ClaimRequest, { workerId: 'w', workflows: [{ name: 'e', version: '1', shard: 'eu west' }], limit: 1 }).reason).toBe('invalid_shard');
    });

    it('is refused with one line', () => {
      expect(refusal(StartRunRequest, [1])).toEqual({ reason: 'invalid_body', message: 'request body must be a JSON object' });
      expect(refusal(StartRunRequest, start({ idempotencyKey: 'k\ud800' })).message).not.toContain('\n');
    });
  });

  describe('decoding', () => {
    it('fills in defaults, reads run ids in lower case and timestamps as dates', () => {
      expect(decode(StartRunRequest, start({ runAt: '2030-01-01T00:00:00Z' }), 'request body')).toEqual({
        workflow: 'echo',
        version: '1',
        input: null,
        priority: 0,
        runAt: new Date('2030-01-01T00:00:00Z'),
      });
      const [report] = parseReportsRequest({ reports: [{ type: 'task', runId: RUN, task: task({ status: 'failed', error: { message: 'boom' } }) }] });
      expect(report).toEqual({
        type: 'task',
        runId: RUN.toLowerCase(),
        task: task({ status: 'failed', output: null, error: { name: 'Error', message: 'boom' } }),
      });
      expect(parseRunId(RUN)).toBe(RUN.toLowerCase());
    });

    it('takes a timestamp in RFC 3339 only: with its offset, of a day and a time the calendar and the clock have', () => {
      const at = (runAt: string) => () => decode(StartRunRequest, start({ runAt }), 'request body');
      for (const good of ['2030-01-31T09:00:00Z', '2030-01-31t09:00:00.123456789012z', '2030-01-31 09:00:00+05:30', '2028-02-29T23:59:59-08:00']) {
        expect(at(good)().runAt).toEqual(new Date(good.replace(' ', 'T')));
      }
      for (const bad of [
        '2030-02-30T00:00:00Z',
        '2029-02-29T00:00:00Z',
        '2030-13-01T00:00:00Z',
        '2030-01-31T24:00:00Z',
        '2030-01-31T09:60:00Z',
        '2030-01-31T09:00:60Z',
        '2030-01-31T09:00:00',
        '2030-01-31',
        'June 1 2030',
        '2030-01-31T09:00:00+25:00',
        '1969-12-31T23:59:59Z',
      ]) {
        expect(at(bad)).toThrow(expect.objectContaining({ reason: 'invalid_runAt' }));
      }
    });

    it('applies the rules no schema keyword says', () => {
      const wakeups = (count: number, prefix: string) => Array.from({ length: count }, (_, i) => `${prefix}${i}`);
      const take = (a: number, b: number) => ({
        workerId: 'w',
        workflows: [
          { name: 'a', version: '1', wakeups: wakeups(a, 'a') },
          { name: 'b', version: '1', wakeups: wakeups(b, 'b') },
        ],
      });
      expect(decode(TakeRunsRequest, take(250, 250), 'request body').workflows).toHaveLength(2);
      expect(refusal(TakeRunsRequest, take(250, 251)).reason).toBe('invalid_wakeups');
      expect(refusal(TakeRunsRequest, { workerId: 'w', workflows: [{ name: 'a', version: '1', wakeups: ['x', 'x'] }] }).reason).toBe('invalid_wakeups');
    });

    it('reads integers of a query from decimal text, and nothing else', () => {
      expect(decodeQuery(ListRunsQuery, { limit: '10', status: 'failed' })).toEqual({ limit: 10, status: 'failed' });
      expect(decodeQuery(ListRunsQuery, {})).toEqual({ limit: 50 });
      for (const limit of ['1e2', ' 10', '10.0', ['1', '2'], '0']) {
        expect(() => decodeQuery(ListRunsQuery, { limit })).toThrow(expect.objectContaining({ reason: 'invalid_limit' }));
      }
      expect(() => decodeQuery(ListRunsQuery, { workflow: '5', sort: 'asc' })).toThrow(
        expect.objectContaining({ reason: 'unknown_field', message: 'query has unknown field(s): sort' }),
      );
      expect(() => decodeQuery(ListRunsQuery, JSON.parse('{"__proto__":["a","b"]}'))).toThrow(expect.objectContaining({ reason: 'unknown_field' }));
    });

    it('keeps integers of a body numbers', () => {
      expect(refusal(StartRunRequest, start({ priority: '5' })).reason).toBe('invalid_priority');
    });

    it('checks single values by the same rules', () => {
      expect(parseIdentifier('order-processing', 'workflow')).toBe('order-processing');
      expect(() => parseIdentifier('a:b', 'shard')).toThrow(expect.objectContaining({ reason: 'invalid_shard' }));
      expect(() => parseRunId('123')).toThrow(expect.objectContaining({ reason: 'invalid_run_id' }));
    });
  });

  describe('the API description', () => {
    const document = openApiDocument();
    const json = JSON.stringify(document);

    it('describes every endpoint once, under its operation id', () => {
      const operations = Object.values(document.paths).flatMap((item) => Object.values(item) as { operationId: string }[]);
      expect(operations.map((operation) => operation.operationId).sort()).toEqual(Object.keys(API).sort());
    });

    it('refers only to schemas it describes', () => {
      const references = [...json.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1]);
      expect(references.length).toBeGreaterThan(0);
      expect(references.filter((name) => !(name in document.components.schemas))).toEqual([]);
    });

    it('gives refusal reasons of fields', () => {
      expect(document.components.schemas.StartRunRequest).toMatchObject({
        additionalProperties: false,
        required: ['workflow', 'version'],
        properties: { workflow: { 'x-reason': 'invalid_workflow', maxLength: 128 }, priority: { default: 0, minimum: -1000, maximum: 1000 } },
      });
    });

    it('refuses two different schemas of one title', () => {
      const a = Type.Object({ a: Type.String() }, { title: 'Same' });
      const b = Type.Object({ b: Type.String() }, { title: 'Same' });
      const endpoint = { method: 'post', path: '/x', audience: 'public', tag: 't', summary: 's', status: 200 } as const;
      expect(() =>
        openApiDocument({
          one: { ...endpoint, responses: { 200: { description: 'a', schema: a } } },
          two: { ...endpoint, path: '/y', responses: { 200: { description: 'b', schema: b } } },
        }),
      ).toThrow('two different schemas are titled Same');
    });
  });
});
