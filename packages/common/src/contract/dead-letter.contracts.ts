import { type Static, type StaticDecode, Type } from '@sinclair/typebox';
import { AnyJson, Closed, DeadLetterId, IntegerIn, withDefaults } from './fields';

/**
 * Something dispatch gave up on: an outbox row that ran out of publish attempts (`outbox`), or a
 * Redis Streams message delivered more than MAX_DELIVERIES times (`stream`). Its run is in PostgreSQL
 * as always; a dead letter says why it may not be moving.
 */
export const DeadLetterView = Closed(
  {
    id: Type.String(),
    origin: Type.Union([Type.Literal('outbox'), Type.Literal('stream')]),
    runId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'null when the wake-up named no run' }),
    queue: Type.String(),
    reason: Type.String({ description: '`publish_failed` or `delivered_too_often`' }),
    message: Type.String(),
    detail: AnyJson('origin-specific: publish attempts; the stream, entry id and delivery count'),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'DeadLetterView' },
);
export type DeadLetterView = Static<typeof DeadLetterView>;

export const DeadLetterPage = Closed(
  { deadLetters: Type.Array(DeadLetterView), nextCursor: Type.Union([Type.String(), Type.Null()]) },
  { title: 'DeadLetterPage' },
);
export type DeadLetterPage = Static<typeof DeadLetterPage>;

/** What a redrive did: the failed run queued again as a new attempt, or its wake-up published again. */
export const RedriveResult = Closed(
  {
    action: Type.Union([Type.Literal('retried'), Type.Literal('republished'), Type.Literal('none')]),
    runStatus: Type.String({ description: "the run's status afterwards" }),
  },
  { title: 'RedriveResult' },
);
export type RedriveResult = Static<typeof RedriveResult>;

export const ListDeadLettersQuery = withDefaults(
  Closed({
    limit: Type.Optional(IntegerIn('limit', 1, 500)),
    /** The last id of the previous page. */
    cursor: Type.Optional(DeadLetterId('cursor')),
  }),
  { limit: 50 },
);
export type ListDeadLettersQuery = StaticDecode<typeof ListDeadLettersQuery>;

export const DeadLetterPath = Type.Object({ id: DeadLetterId('dead_letter_id') });
