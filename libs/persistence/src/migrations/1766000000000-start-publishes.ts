import type { MigrationInterface, QueryRunner } from 'typeorm';
import { OUTBOX_NOTIFY } from './1764600000000-outbox';
import { ENQUEUE_READY } from './1764900000000-dispatch-wakeups';

/** outbox_notify as the outbox migration made it, to replace (and to put back on the way down). */
const OUTBOX_NOTIFY_REPLACED = OUTBOX_NOTIFY.replace('CREATE FUNCTION outbox_notify(', 'CREATE OR REPLACE FUNCTION outbox_notify(');

/** The transaction's start statement wrote its runs' outbox rows itself (see below). */
const STARTED_WITH_OUTBOX = `current_setting('wf.start_outbox', true) = 'on'`;

const ENQUEUE_READY_SKIPPING = ENQUEUE_READY.replace(`IN ('', 'none') THEN`, `IN ('', 'none') OR ${STARTED_WITH_OUTBOX} THEN`);
const OUTBOX_NOTIFY_QUIET = OUTBOX_NOTIFY_REPLACED.replace(
  `BEGIN
        PERFORM`,
  `BEGIN
        IF ${STARTED_WITH_OUTBOX} OR NOT EXISTS (SELECT 1 FROM inserted_rows) THEN
          RETURN NULL;
        END IF;
        PERFORM`,
);
// The texts these edit are fixed (an applied migration never changes); this catches an edit of them anyway.
if (ENQUEUE_READY_SKIPPING === ENQUEUE_READY || OUTBOX_NOTIFY_QUIET === OUTBOX_NOTIFY_REPLACED || OUTBOX_NOTIFY_REPLACED === OUTBOX_NOTIFY) {
  throw new Error('runs_enqueue_ready or outbox_notify no longer has the text this migration edits');
}

/**
 * A start publishes its own wake-ups (RunControlRepository.start with `publish`): the start statement writes
 * the outbox rows of the runs it inserts itself, those due now already `in_flight` (taken, as the enqueuer's
 * batch statement would mark them), returns their ids, and the coordinator that committed it publishes them
 * at once, without the enqueuer's NOTIFY and batch statement in between (about 1 ms of every start in the
 * Redis modes). It sets `wf.start_outbox` for its transaction (the statement is the whole transaction), so
 * the enqueue trigger does not write a second row for those runs, and outbox_notify wakes no enqueuer for
 * rows it has nothing to do with (the rows due later are announced by the due timers, as any). A
 * coordinator that dies between the commit and the publish leaves its rows `in_flight`: the enqueuers'
 * maintenance returns them to retry after OUTBOX_STALE_IN_FLIGHT_MS, as a batch of a dead enqueuer's.
 *
 * outbox_notify also stays quiet for an insert of no rows (it reads the statement's new rows, a transition
 * table): a statement-level trigger fires for those too, and the claim statement's rate wake-up CTE, an
 * INSERT that writes a row only when a rate limit ran out, woke every enqueuer for nothing at each commit.
 */
export class StartPublishes1766000000000 implements MigrationInterface {
  name = 'StartPublishes1766000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE_READY_SKIPPING);
    await queryRunner.query(OUTBOX_NOTIFY_QUIET);
    await queryRunner.query(`DROP TRIGGER outbox_notify ON outbox`);
    await queryRunner.query(
      `CREATE TRIGGER outbox_notify AFTER INSERT ON outbox REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(ENQUEUE_READY);
    await queryRunner.query(`DROP TRIGGER outbox_notify ON outbox`);
    await queryRunner.query(OUTBOX_NOTIFY_REPLACED);
    await queryRunner.query(`CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()`);
  }
}
