import {
  claimOutboxBatch,
  Database,
  deadLetterOutboxRows,
  deleteOutboxRows,
  deleteStaleSentOutboxRows,
  markOutboxRowsSent,
  type OutboxRow,
  type OutboxStats,
  outboxStats,
  recoverStaleInFlight,
  retryOutboxRowsNow,
  scheduleOutboxRetries,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';

export type { OutboxRow, OutboxStats } from '@app/persistence';

/** The enqueuer's use of the outbox (its statements are libs/persistence/src/sql/outbox.sql.ts). */
@Injectable()
export class OutboxRepository {
  constructor(private readonly db: Database) {}

  /** Claims up to `limit` due rows and marks them in_flight (several enqueuers take disjoint sets). */
  claimBatch(limit: number): Promise<OutboxRow[]> {
    return claimOutboxBatch(this.db, limit);
  }

  /** Sent rows are deleted in one statement; if that fails they are marked sent so nothing republishes them. */
  async removeSent(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await deleteOutboxRows(this.db, ids);
    } catch {
      await markOutboxRowsSent(this.db, ids);
    }
  }

  /** Failed rows wait their own delay before the next attempt. */
  async scheduleRetries(failures: { id: string; delayMs: number; error: string }[]): Promise<void> {
    if (failures.length === 0) return;
    await scheduleOutboxRetries(this.db, failures);
  }

  /** Rows out of retries become dead letters (one statement: a row cannot be in both). */
  async deadLetter(failures: { id: string; error: string }[]): Promise<void> {
    if (failures.length === 0) return;
    await deadLetterOutboxRows(this.db, failures);
  }

  /** Rows left in_flight by an enqueuer that died mid-batch go back to retry. */
  recoverStaleInFlight(olderThanMs: number): Promise<number> {
    return recoverStaleInFlight(this.db, olderThanMs);
  }

  /** Rows waiting out a publish retry's delay are due now; returns how many. */
  retryNow(): Promise<number> {
    return retryOutboxRowsNow(this.db);
  }

  deleteSentOlderThan(ms: number): Promise<void> {
    return deleteStaleSentOutboxRows(this.db, ms);
  }

  stats(): Promise<OutboxStats> {
    return outboxStats(this.db);
  }
}
