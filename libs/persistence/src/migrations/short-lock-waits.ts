import type { QueryRunner } from 'typeorm';

/** How long one attempt of a statement that blocks a table's writes may wait for its lock, and how many it makes. */
const LOCK_WAIT = { timeoutMs: 100, pauseMs: 100, attempts: 600 };

/**
 * Runs `statement`, which takes a lock that blocks writes (ACCESS EXCLUSIVE; SHARE ROW EXCLUSIVE for a trigger)
 * for catalog work only, without letting its wait stall the table: a lock request queues every later statement on
 * the table behind it, so one that waited behind a long transaction (a retention batch, a report) would stop every
 * write for as long. Each attempt waits at most LOCK_WAIT.timeoutMs, then gives the queued statements a pause
 * before the next; after LOCK_WAIT.attempts (one to two minutes) the migration fails, and the next start tries
 * again. Some of those statements also lock a second table (a trigger's, a foreign key's): the wait covers both.
 */
export async function withShortLockWaits(queryRunner: QueryRunner, statement: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await queryRunner.query(`SET lock_timeout = ${LOCK_WAIT.timeoutMs}`);
    try {
      await queryRunner.query(statement);
      return;
    } catch (error) {
      if ((error as { driverError?: { code?: string } }).driverError?.code !== LOCK_NOT_AVAILABLE || attempt === LOCK_WAIT.attempts) throw error;
    } finally {
      await queryRunner.query(`RESET lock_timeout`);
    }
    await new Promise((resolve) => setTimeout(resolve, LOCK_WAIT.pauseMs));
  }
}

/** SQLSTATE of a lock wait that reached lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';
