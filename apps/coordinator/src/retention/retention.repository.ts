import {
  Database,
  deleteExpiredDeadLetters,
  deleteFinishedRuns,
  deleteSentOutboxRows,
  type FinishedRunsBatch,
  type RetentionWindows,
  type SqlExecutor,
  tuneRetentionBatch,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';

/**
 * Retention's deletes (libs/persistence/src/sql/retention.sql.ts), each a batch in a transaction of its own:
 * one statement that deletes at most `limit` rows, so no lock is held for long. Each returns how many it deleted.
 */
@Injectable()
export class RetentionRepository {
  constructor(private readonly db: Database) {}

  /** Finished runs older than their workflow's window, with their steps, transitions and events; and how far behind retention is. */
  deleteFinishedRuns(windows: RetentionWindows, limit: number): Promise<FinishedRunsBatch> {
    return this.batch((tx) => deleteFinishedRuns(tx, windows, limit));
  }

  /** Sent outbox rows older than the default window (none while it is 0: kept). */
  async deleteSentOutboxRows(defaultMs: number, limit: number): Promise<number> {
    if (defaultMs === 0) return 0;
    return this.batch((tx) => deleteSentOutboxRows(tx, defaultMs, limit));
  }

  /** Dead letters older than the window of their queue's workflow. */
  deleteDeadLetters(windows: RetentionWindows, limit: number): Promise<number> {
    return this.batch((tx) => deleteExpiredDeadLetters(tx, windows, limit));
  }

  /** One batch, in a transaction of its own, tuned for it (tuneRetentionBatch: no JIT, no wait for the WAL flush). */
  private batch<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tuneRetentionBatch(tx);
      return work(tx);
    });
  }
}
