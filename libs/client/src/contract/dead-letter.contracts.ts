import { fail, type JsonValue, parseInteger, rejectUnknownFields } from './validation';

/**
 * Something dispatch gave up on: an outbox row that ran out of publish attempts (`outbox`), or a
 * Redis Streams message delivered more than MAX_DELIVERIES times (`stream`). Its run is in PostgreSQL
 * as always; a dead letter says why it may not be moving.
 */
export interface DeadLetterView {
  id: string;
  origin: 'outbox' | 'stream';
  runId: string;
  queue: string;
  /** `publish_failed` or `delivered_too_often`. */
  reason: string;
  message: string;
  /** Origin-specific: publish attempts; the stream, entry id and delivery count. */
  detail: JsonValue;
  createdAt: string;
}

export interface DeadLetterPage {
  deadLetters: DeadLetterView[];
  nextCursor: string | null;
}

/** What a redrive did: the failed run queued again as a new attempt, or its wake-up published again. */
export interface RedriveResult {
  action: 'retried' | 'republished' | 'none';
  /** The run's status afterwards. */
  runStatus: string;
}

export interface ListDeadLettersQuery {
  limit: number;
  /** The last id of the previous page. */
  cursor?: string;
}

export function parseListDeadLettersQuery(raw: Record<string, unknown>): ListDeadLettersQuery {
  rejectUnknownFields(raw, ['limit', 'cursor'], 'query');
  return {
    limit: raw.limit === undefined ? 50 : parseInteger(raw.limit, 'limit', 1, 500),
    cursor: raw.cursor === undefined ? undefined : parseDeadLetterId(raw.cursor, 'cursor'),
  };
}

export function parseDeadLetterId(value: unknown, field = 'dead_letter_id'): string {
  if (typeof value !== 'string' || !/^[1-9]\d{0,17}$/.test(value)) fail(`invalid_${field}`, `${field} must be a positive integer`);
  return value;
}
