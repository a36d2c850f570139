import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { Closed, Identifier, IntegerIn, Key, Nullable, REASON, withDefaults } from './fields';
import { JsonDocument, type JsonValue } from './json-document';
import { MAX_DELAY_MS, REVISION_MAX, traceFields } from './worker.contracts';

/**
 * Completion tokens (`ctx.awaitExternal`): a step an outside system finishes with `POST /v1/completions/{token}`.
 * The token is made by the coordinator: `wfct_` and 43 base64url characters, 256 random bits. The prefix lets
 * secret scanners and logs tell one apart.
 */
export const COMPLETION_TOKEN_PATTERN = '^wfct_[A-Za-z0-9_-]{43}$';

export const CompletionTokenPath = Type.Object({
  token: Type.String({
    pattern: COMPLETION_TOKEN_PATTERN,
    description: "a completion token ('wfct_' and 43 base64url characters)",
    [REASON]: 'invalid_completion_token',
  }),
});

/** Why the outside system failed the step: what the waiting workflow's CompletionFailedError carries. */
export const CompletionError = Closed(
  {
    message: Key('error_message'),
    name: Type.Optional(Identifier('error_name')),
    data: Type.Optional(JsonDocument('error_data')),
  },
  { title: 'CompletionError' },
);
export type CompletionError = StaticDecode<typeof CompletionError>;

/**
 * `data` completes the step with that value (null when absent); `error` fails it instead. Not both: a caller that
 * sends both is refused rather than have one of them ignored.
 */
export const CompleteRequest = Closed(
  { data: Type.Optional(JsonDocument('data')), error: Type.Optional(CompletionError) },
  { title: 'CompleteRequest', description: 'send `data` to complete the step, or `error` to fail it (not both)' },
);
export type CompleteRequest = StaticDecode<typeof CompleteRequest>;

export const CompletionAccepted = Closed(
  {
    delivered: Type.Boolean({
      description: 'true when the run was waiting on this token and has been woken; false when the outcome is kept until it waits',
    }),
  },
  { title: 'CompletionAccepted' },
);
export type CompletionAccepted = Static<typeof CompletionAccepted>;

/**
 * A worker records a completion token at step `key` (`token:<name>#<n>`), expiring after `timeoutMs` (null:
 * never by itself). The coordinator makes the token; the step's output holds it, so a re-execution hands out
 * the same one. Sent again for a key already recorded, it answers the recorded step.
 */
export const CreateCompletionTokenRequest = withDefaults(
  Closed(
    {
      expectedRevision: IntegerIn('expectedRevision', 0, REVISION_MAX),
      key: Key('key'),
      seq: IntegerIn('seq', 0, 1_000_000),
      name: Key('name'),
      timeoutMs: Type.Optional(Nullable(IntegerIn('timeoutMs', 1, MAX_DELAY_MS))),
      ...traceFields,
    },
    { title: 'CreateCompletionTokenRequest' },
  ),
  { timeoutMs: null },
);
export type CreateCompletionTokenRequest = StaticDecode<typeof CreateCompletionTokenRequest>;

/** The output of a `token` step: the token, and when it expires (null: never by itself). */
export interface CompletionTokenStepOutput {
  token: string;
  expiresAt: string | null;
}

/**
 * The output of an `external` step (the wait on a token) once resolved: the outside system's outcome, or
 * `{ timedOut: true }` when the token expired first.
 */
export type ExternalStepOutput =
  | { timedOut: false; status: 'completed'; data: JsonValue }
  | { timedOut: false; status: 'failed'; error: { name: string; message: string; data: JsonValue } }
  | { timedOut: true };
