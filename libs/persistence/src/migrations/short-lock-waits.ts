import type { QueryRunner } from 'typeorm';
import { retryOnLockTimeout } from '../lock-timeouts';

/** How long one attempt of a statement that blocks a table's writes may wait for its lock, and how many it makes. */
const LOCK_WAIT = { timeoutMs: 100, pauseMs: 100, attempts: 600 };

/**
 * Runs `work`, which takes locks that block writes (ACCESS EXCLUSIVE; SHARE ROW EXCLUSIVE for a trigger) for
 * catalog work only, without letting its wait stall the table: a lock request queues every later statement on
 * the table behind it, so one that waited behind a long transaction (a retention batch, a report) would stop every
 * write for as long. Each attempt waits at most LOCK_WAIT.timeoutMs for each lock, then gives the queued statements
 * a pause before the next; after LOCK_WAIT.attempts (one to two minutes) the migration fails, and the next start
 * tries again. Some of those statements also lock a second table (a trigger's, a foreign key's): the wait covers both.
 *
 * `work` is one statement, or several in one transaction (a function sending them on `queryRunner`, which must not
 * be in a transaction already): an attempt that times out rolls all of them back.
 */
export async function withShortLockWaits(queryRunner: QueryRunner, work: string | (() => Promise<void>)): Promise<void> {
  await retryOnLockTimeout(() => (typeof work === 'string' ? statementAttempt(queryRunner, work) : transactionAttempt(queryRunner, work)), LOCK_WAIT);
}

async function statementAttempt(queryRunner: QueryRunner, statement: string): Promise<void> {
  await queryRunner.query(`SET lock_timeout = ${LOCK_WAIT.timeoutMs}`);
  try {
    await queryRunner.query(statement);
  } finally {
    await queryRunner.query(`RESET lock_timeout`);
  }
}

async function transactionAttempt(queryRunner: QueryRunner, work: () => Promise<void>): Promise<void> {
  await queryRunner.query('BEGIN');
  try {
    await queryRunner.query(`SET LOCAL lock_timeout = ${LOCK_WAIT.timeoutMs}`);
    await work();
    await queryRunner.query('COMMIT');
  } catch (error) {
    await queryRunner.query('ROLLBACK');
    throw error;
  }
}
