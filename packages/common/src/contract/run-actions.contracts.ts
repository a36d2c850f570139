import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { Closed, Flag, IntegerIn, REASON, RunId, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { runFilterFields } from './run.contracts';
import { Tags } from './tags';

/** What operators do to runs beyond one at a time: a rerun as a new run, and cancels or retries of every run a filter matches. */

/** `POST /v1/runs/{id}/rerun`: a new run of the finished run's workflow version; `input` absent: the old run's input. */
export const RerunRequest = Closed(
  {
    input: Type.Optional(JsonDocument('input')),
    /** The new run's tags instead of the old run's (the `rerun-of` tag is added to either). */
    tags: Type.Optional(Tags),
  },
  { title: 'RerunRequest' },
);
export type RerunRequest = StaticDecode<typeof RerunRequest>;

/** The most runs one bulk request acts on (each in a transaction of its own, as a single cancel or retry). */
export const BULK_LIMIT_MAX = 1_000;
/** A dry run counts up to this many matching runs (`capped` past it), so a count costs the same whatever the history. */
export const BULK_COUNT_MAX = 100_000;

export const RunFilter = Closed(runFilterFields, {
  title: 'RunFilter',
  description: "an object: the runs list's filter (GET /v1/runs), `{}` for every run",
  [REASON]: 'invalid_filter',
});
export type RunFilter = StaticDecode<typeof RunFilter>;

/**
 * `POST /v1/runs/cancel` and `/v1/runs/retry`: act on the runs that match `filter` and that the action applies to
 * (cancel: unfinished runs; retry: failed ones), newest first, at most `limit` per request; `before` continues
 * where the previous answer stopped. `dryRun` counts them instead, and answers the `before` that keeps runs created
 * after the count out of the requests that follow.
 */
export const BulkRunsRequest = withDefaults(
  Closed(
    {
      filter: RunFilter,
      dryRun: Type.Optional(Flag('dryRun')),
      before: Type.Optional(RunId('before')),
      limit: Type.Optional(IntegerIn('limit', 1, BULK_LIMIT_MAX)),
    },
    { title: 'BulkRunsRequest' },
  ),
  { dryRun: false, limit: 500 },
);
export type BulkRunsRequest = StaticDecode<typeof BulkRunsRequest>;

export const BulkRunsResult = Closed(
  {
    matched: Type.Integer({
      description: `a dry run: the runs that match and the action applies to now (counted up to ${BULK_COUNT_MAX.toLocaleString('en')}: see capped); otherwise those this request found`,
    }),
    capped: Type.Boolean({ description: `a dry run stopped counting at ${BULK_COUNT_MAX.toLocaleString('en')}: at least that many match` }),
    acted: Type.Integer({ description: 'runs this request cancelled or retried (a run another request changed first is not counted)' }),
    before: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'pass it back as `before` for the next request; null: no matching run is left (a dry run always answers one)',
    }),
  },
  { title: 'BulkRunsResult' },
);
export type BulkRunsResult = Static<typeof BulkRunsResult>;
