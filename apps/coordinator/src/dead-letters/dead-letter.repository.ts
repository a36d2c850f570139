import type { DeadLetterView } from '@nest-durable/common';
import { Database, type SqlExecutor } from '@app/persistence';
import { Injectable } from '@nestjs/common';

const COLUMNS = `id::text, origin, run_id AS "runId", queue, reason, message, detail, created_at AS "createdAt"`;

export type DeadLetterRow = Omit<DeadLetterView, 'createdAt'> & { createdAt: Date };

export interface StreamDeadLetter {
  runId?: string;
  queue: string;
  /** How the worker names the wake-up: its partition and entry id. */
  wakeup: string;
  deliveries: number;
}

/**
 * Dead letters of every origin, in one table: outbox rows are moved here by the enqueuer
 * (OutboxRepository.deadLetter), Streams wake-ups delivered too often are reported by workers.
 */
@Injectable()
export class DeadLetterRepository {
  constructor(private readonly db: Database) {}

  /**
   * Newest first; the cursor is the last id of the previous page. `d.id`, not `id`: ORDER BY would take the
   * output column, the id as text, where '10' < '9'.
   */
  list(limit: number, beforeId?: string): Promise<DeadLetterRow[]> {
    return this.db.query<DeadLetterRow>(`SELECT ${COLUMNS} FROM dead_letters d WHERE $2::bigint IS NULL OR d.id < $2::bigint ORDER BY d.id DESC LIMIT $1`, [
      limit,
      beforeId ?? null,
    ]);
  }

  /** Locks the dead letter for the rest of the transaction (a redrive and a delete of the same one take turns). */
  async lock(tx: SqlExecutor, id: string): Promise<DeadLetterRow | undefined> {
    const [row] = await tx.query<DeadLetterRow>(`SELECT ${COLUMNS} FROM dead_letters WHERE id = $1 FOR UPDATE`, [id]);
    return row;
  }

  async delete(id: string, on: SqlExecutor = this.db): Promise<boolean> {
    return (await on.query(`DELETE FROM dead_letters WHERE id = $1 RETURNING id`, [id])).length > 0;
  }

  /** Records a Streams message delivered too often; reported twice (a retried report), it is recorded once. */
  async recordStream(tx: SqlExecutor, letter: StreamDeadLetter): Promise<string> {
    const [row] = await tx.query<{ id: string }>(
      `INSERT INTO dead_letters (origin, ref, run_id, queue, reason, message, detail)
       VALUES ('stream', $1 || '/' || $2, $3, $1, 'delivered_too_often',
               format('the wake-up was delivered %s times: the workers that took it stopped without finishing', $4::integer),
               jsonb_build_object('wakeup', $2::text, 'deliveries', $4::integer))
       ON CONFLICT (origin, ref) DO UPDATE SET detail = excluded.detail, run_id = coalesce(excluded.run_id, dead_letters.run_id)
       RETURNING id::text`,
      [letter.queue, letter.wakeup, letter.runId ?? null, letter.deliveries],
    );
    return row.id;
  }

  /** A new wake-up for the run's queue (the outbox publishes it like any other). */
  async republish(tx: SqlExecutor, runId: string): Promise<void> {
    await tx.query(`INSERT INTO outbox (run_id, queue) SELECT id, queue FROM runs WHERE id = $1`, [runId]);
  }
}
