import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { AnyJson, Closed, Identifier, IntegerIn, Key, ListOf, Nullable, OneOf, REASON, RunId, withDefaults } from './fields';
import { JsonDocument } from './json-document';
import { ErrorDetails } from './run.contracts';

/**
 * Updates (docs/architecture.md, "Updates"): a request a running workflow answers. A client sends one to a run
 * (`POST /v1/runs/:id/updates/:name`); the run applies it where it waits, in arrival order, records it in its
 * history as an `update` step, and the caller gets the handler's answer.
 */

/** The longest a caller waits for an update's answer in one request; past it the answer is 202 with the update to poll. */
export const UPDATE_WAIT_MS_MAX = 60_000;
/** How long a caller waits by default. */
export const UPDATE_WAIT_MS_DEFAULT = 30_000;
/** The most updates one workflow version may declare. */
export const DECLARED_UPDATES_MAX = 100;
/** The most pending updates a worker is handed at one wait (the rest at the next round of the same wait). */
export const PENDING_UPDATES_MAX = 100;

export const UPDATE_STATUSES = ['pending', 'completed', 'failed', 'refused'] as const;
/**
 * pending: accepted, not applied yet; completed: its handler answered; failed: its handler threw (or the run had no
 * handler for it when it applied it); refused: the run ended before applying it.
 */
export type UpdateStatus = (typeof UPDATE_STATUSES)[number];

export const RunUpdatePath = Type.Object({ id: RunId('run_id'), name: Identifier('update_name') });
export const UpdateIdPath = Type.Object({ id: RunId('run_id'), name: Identifier('update_name'), updateId: RunId('update_id') });

export const SendUpdateRequest = withDefaults(
  Closed(
    {
      input: Type.Optional(JsonDocument('input')),
      /** How long to wait for the run's answer before answering 202 with the update to poll. */
      waitMs: Type.Optional(IntegerIn('waitMs', 0, UPDATE_WAIT_MS_MAX)),
    },
    { title: 'SendUpdateRequest' },
  ),
  { input: null, waitMs: UPDATE_WAIT_MS_DEFAULT },
);
export type SendUpdateRequest = StaticDecode<typeof SendUpdateRequest>;

export const UpdateResultQuery = withDefaults(Closed({ waitMs: Type.Optional(IntegerIn('waitMs', 0, UPDATE_WAIT_MS_MAX)) }), { waitMs: 0 });

export const UpdateView = Closed(
  {
    id: Type.String({ format: 'uuid' }),
    runId: Type.String({ format: 'uuid' }),
    name: Type.String(),
    status: OneOf('status', UPDATE_STATUSES),
    input: AnyJson(),
    output: AnyJson('the handler’s answer (null until completed)'),
    error: Nullable(ErrorDetails),
    createdAt: Type.String({ format: 'date-time' }),
    answeredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'UpdateView' },
);
export type UpdateView = Static<typeof UpdateView>;

/** The 422 of an update whose handler threw: the error body, with the update (its `error` is what the handler threw). */
export const UpdateFailedBody = Closed(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    reason: Type.Literal('update_failed'),
    message: Type.String(),
    update: UpdateView,
  },
  { title: 'UpdateFailedBody' },
);
export type UpdateFailedBody = Static<typeof UpdateFailedBody>;

// ---- the worker's side ----

/** An update handed to the worker to apply at the wait it suspends at (StepResponse.updates). */
export const PendingUpdate = Closed({ id: Type.String({ format: 'uuid' }), name: Type.String(), input: AnyJson() }, { title: 'PendingUpdate' });
export type PendingUpdate = Static<typeof PendingUpdate>;

/** A handler's answer, as the coordinator takes it (a worker checks it before recording it). */
export const UpdateOutput = JsonDocument('output');

const AppliedUpdate = Type.Union(
  [
    Closed({ id: RunId('id'), key: Key('key'), status: Type.Literal('completed'), output: Type.Optional(UpdateOutput) }),
    Closed({ id: RunId('id'), key: Key('key'), status: Type.Literal('failed'), error: ErrorDetails }),
  ],
  { [REASON]: 'invalid_updates' },
);

/** Updates a worker applied at the wait at step position `seq`, recorded (fenced by `expectedRevision`) in arrival order. */
export const RecordUpdatesRequest = Closed(
  {
    // REVISION_MAX and SEQ_MAX of worker.contracts.ts (which imports this file for StepResponse).
    expectedRevision: IntegerIn('expectedRevision', 0, 2 ** 31 - 2),
    seq: IntegerIn('seq', 0, 1_000_000),
    updates: ListOf('updates', AppliedUpdate, 1, PENDING_UPDATES_MAX, 'applied updates'),
  },
  { title: 'RecordUpdatesRequest' },
);
export type RecordUpdatesRequest = StaticDecode<typeof RecordUpdatesRequest>;
