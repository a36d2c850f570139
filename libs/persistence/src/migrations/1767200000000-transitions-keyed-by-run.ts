import type { MigrationInterface, QueryRunner } from 'typeorm';
import { keyById, keyByRun } from './keyed-by-run';

/**
 * A run's transitions keyed by `(run_id, id)` instead of `id`: one index where there were two (the primary key on
 * `id`, and `run_transitions_run_idx (run_id, id)`). Nothing looks a transition up by id alone; the new key orders
 * a run's transitions as the history reads them (runs-list.sql.ts) and as retention's cascade deletes them. A run
 * writes three, so each start, claim and finish updates one index fewer (docs/benchmarks.md). How, without
 * blocking writes: keyed-by-run.ts.
 */
export class TransitionsKeyedByRun1767200000000 implements MigrationInterface {
  name = 'TransitionsKeyedByRun1767200000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await keyByRun(queryRunner, 'run_transitions', 'run_transitions_run_idx');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await keyById(queryRunner, 'run_transitions', 'run_transitions_run_idx', '(run_id, id)');
  }
}
