import type { MigrationInterface, QueryRunner } from 'typeorm';
import { keyById, keyByRun } from './keyed-by-run';

/**
 * A run's events and updates keyed by `(run_id, id)` instead of `id`, as its transitions are
 * (1767200000000-transitions-keyed-by-run): the key a table partitioned by run id needs, and one index fewer on
 * each (`run_events_run_idx` and `run_updates_run_idx`, both on `run_id`, are served by the new key). Every
 * statement names the run beside the id; the event consumption does since 03a7869, a release before this one. A
 * coordinator older than that consumes an event by its id alone, which the new key turns into a scan of
 * `run_events`; rolling upgrades start from the release before (docs/architecture.md, "Upgrades"). How, without
 * blocking writes: keyed-by-run.ts.
 */
export class EventsAndUpdatesKeyedByRun1767300000000 implements MigrationInterface {
  name = 'EventsAndUpdatesKeyedByRun1767300000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await keyByRun(queryRunner, 'run_events', 'run_events_run_idx');
    await keyByRun(queryRunner, 'run_updates', 'run_updates_run_idx');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await keyById(queryRunner, 'run_updates', 'run_updates_run_idx', '(run_id)');
    await keyById(queryRunner, 'run_events', 'run_events_run_idx', '(run_id)');
  }
}
