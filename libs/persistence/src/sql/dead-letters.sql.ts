import type { DeadLetterView, RunStatus } from '@nest-durable/common';
import type { SqlExecutor } from '../database';

/*
 * Dead letters of every origin, in one table: outbox rows are moved here by the enqueuer (deadLetterOutboxRows),
 * Streams wake-ups delivered too often are reported by workers (recordStreamDeadLetter). A redrive and a delete
 * of one dead letter take turns on its row (lockDeadLetter).
 */

export type DeadLetterRow = Omit<DeadLetterView, 'createdAt'> & { createdAt: Date };

const LIST_DEAD_LETTERS = `SELECT id::text, origin, run_id AS "runId", queue, reason, message, detail, created_at AS "createdAt"
    FROM dead_letters d WHERE $2::bigint IS NULL OR d.id < $2::bigint ORDER BY d.id DESC LIMIT $1`;

/**
 * Newest first; the cursor is the last id of the previous page (a read: no lock). `d.id`, not `id`: ORDER BY
 * would take the output column, the id as text, where '10' < '9'.
 */
export function listDeadLetters(db: SqlExecutor, limit: number, beforeId?: string): Promise<DeadLetterRow[]> {
  return db.query<DeadLetterRow>(LIST_DEAD_LETTERS, [limit, beforeId ?? null]);
}

const LOCK_DEAD_LETTER = `SELECT id::text, origin, run_id AS "runId", queue, reason, message, detail, created_at AS "createdAt"
    FROM dead_letters WHERE id = $1 FOR UPDATE`;

/** Locks the dead letter for the rest of the transaction (a redrive and a delete of the same one take turns). */
export async function lockDeadLetter(tx: SqlExecutor, id: string): Promise<DeadLetterRow | undefined> {
  const [row] = await tx.query<DeadLetterRow>(LOCK_DEAD_LETTER, [id]);
  return row;
}

const DELETE_DEAD_LETTER = `DELETE FROM dead_letters WHERE id = $1 RETURNING id`;

/** Deletes the dead letter; false if it was not there (deleted by a concurrent redrive or delete, which won). */
export async function deleteDeadLetter(db: SqlExecutor, id: string): Promise<boolean> {
  return (await db.query(DELETE_DEAD_LETTER, [id])).length > 0;
}

/** A Streams wake-up a worker reports delivered too often. */
export interface StreamDeadLetter {
  runId?: string;
  queue: string;
  /** How the worker names the wake-up: its partition and entry id. */
  wakeup: string;
  deliveries: number;
}

const RECORD_STREAM_DEAD_LETTER = `INSERT INTO dead_letters (origin, ref, run_id, queue, reason, message, detail)
  VALUES ('stream', $1 || '/' || $2, $3, $1, 'delivered_too_often',
          format('the wake-up was delivered %s times: the workers that took it stopped without finishing', $4::integer),
          jsonb_build_object('wakeup', $2::text, 'deliveries', $4::integer))
  ON CONFLICT (origin, ref) DO UPDATE SET detail = excluded.detail, run_id = coalesce(excluded.run_id, dead_letters.run_id)
  RETURNING id::text`;

/**
 * Records a Streams message delivered too often; reported twice (a retried report, or two workers at once), it
 * is recorded once: ON CONFLICT on (origin, ref) makes the second wait for the first and update its row.
 */
export async function recordStreamDeadLetter(tx: SqlExecutor, letter: StreamDeadLetter): Promise<string> {
  const [row] = await tx.query<{ id: string }>(RECORD_STREAM_DEAD_LETTER, [letter.queue, letter.wakeup, letter.runId ?? null, letter.deliveries]);
  return row.id;
}

const LOCK_REDRIVEN_RUN = `SELECT status, error->>'reason' AS reason FROM runs WHERE id = $1 FOR UPDATE`;

/**
 * Locks the dead letter's run for the redrive's transaction and says where it stands (its status, and why it
 * failed): no transition of it commits between this read and what the redrive does about it.
 */
export async function lockRedrivenRun(tx: SqlExecutor, runId: string): Promise<{ status: RunStatus; reason: string | null } | undefined> {
  const [row] = await tx.query<{ status: RunStatus; reason: string | null }>(LOCK_REDRIVEN_RUN, [runId]);
  return row;
}

const REPUBLISH_RUN = `INSERT INTO outbox (run_id, queue) SELECT id, queue FROM runs WHERE id = $1`;

/** A new wake-up for the run's queue (the outbox publishes it like any other, once this transaction commits). */
export async function republishRun(tx: SqlExecutor, runId: string): Promise<void> {
  await tx.query(REPUBLISH_RUN, [runId]);
}
