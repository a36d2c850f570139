import { type Static, Type } from '@sinclair/typebox';
import { AnyJson, Closed, Identifier, Key, OneOf, RunId } from './fields';
import { documentProblem } from './json-document';
import { fail } from './validation';

/**
 * What a run shows of itself (docs/architecture.md, "Queries, exposed values and progress"): the values it exposes
 * (`ctx.expose`, query handlers), read by `GET /v1/runs/{id}/queries/{name}`, and its progress (`ctx.progress`),
 * kept on the run and streamed on the live feed.
 */

/**
 * The largest progress value, in bytes of JSON: it travels whole in a NOTIFY to every coordinator's feeds (at most
 * 8000 bytes, which jsonb's text of 4 KiB stays under) and on every watcher's connection.
 */
export const PROGRESS_MAX_BYTES = 4096;
/** The largest exposed value (or query handler answer), in bytes of JSON: it is read whole by every query. */
export const EXPOSED_VALUE_MAX_BYTES = 64 * 1024;
/** Names one run may expose values under (query handlers included). */
export const EXPOSED_NAMES_MAX = 100;

/** Refuses (InvalidRequestError `progress_too_large`, or the reason a document gets) a progress value the coordinator would refuse. */
export function checkProgress(value: unknown): void {
  checkSized(value, 'progress', PROGRESS_MAX_BYTES, 'progress');
}

/** Refuses (InvalidRequestError `value_too_large`, or the reason a document gets) an exposed value the coordinator would refuse. */
export function checkExposedValue(name: string, value: unknown): void {
  checkSized(value, 'value', EXPOSED_VALUE_MAX_BYTES, `exposed value ${JSON.stringify(name)}`);
}

function checkSized(value: unknown, field: string, maxBytes: number, where: string): void {
  if (value === undefined) fail(`invalid_${field}`, `${where} must be a JSON value (not undefined)`);
  const problem = documentProblem(value, field, where);
  if (problem) fail(problem.reason, problem.message);
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > maxBytes) fail(`${field}_too_large`, `${where} is ${bytes} bytes of JSON; the limit is ${maxBytes}`);
}

export const QueryPath = Type.Object({ id: RunId('run_id'), name: Key('query_name') });

/** Where a query's answer was found: a value the run exposed (or its query handler answered), or a task's result. */
export const QUERY_SOURCES = ['value', 'task'] as const;

export const QueryAnswer = Closed(
  {
    runId: Type.String({ format: 'uuid' }),
    name: Type.String(),
    source: OneOf('source', QUERY_SOURCES),
    value: AnyJson(),
    updatedAt: Type.String({ format: 'date-time', description: 'when the value was recorded (a task: when its result was)' }),
  },
  {
    title: 'QueryAnswer',
    description:
      'what the run recorded under the name: the value it exposed (ctx.expose or a query handler) if it has one, otherwise the output of its last completed task of that name',
  },
);
export type QueryAnswer = Static<typeof QueryAnswer>;

/** Every value a run exposed (ctx.expose, query handlers' answers), by name: what `GET /v1/runs/{id}/queries` lists. */
export const RunValues = Closed(
  {
    runId: Type.String({ format: 'uuid' }),
    values: Type.Array(
      Closed(
        {
          name: Type.String(),
          value: AnyJson(),
          updatedAt: Type.String({ format: 'date-time', description: 'when the value was last recorded (changed)' }),
        },
        { title: 'RunValue' },
      ),
      { description: `ordered by name; at most ${EXPOSED_NAMES_MAX} (a run exposes no more)` },
    ),
  },
  { title: 'RunValues', description: 'the values the run exposed (task results are not listed: query one by name)' },
);
export type RunValues = Static<typeof RunValues>;

/** `event: progress` on the live feed: a run reported progress (committed). */
export const RunProgress = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    workflow: Type.String(),
    version: Type.String(),
    progress: AnyJson(),
    at: Type.String({ format: 'date-time' }),
  },
  { title: 'RunProgress' },
);
export type RunProgress = Static<typeof RunProgress>;

/** An exposed value's name, as `ctx.expose` and query handlers take it. */
export const ValueName = Identifier('value_name');
