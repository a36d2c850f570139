import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `runs_idempotency_key_idx` dropped: since 1767100000000-idempotency-keys, `idempotency_keys` holds every key
 * (claimed by a trigger on `runs`) and every lookup by key goes through it; the unique index stayed one release,
 * only as the arbiter of older coordinators' `ON CONFLICT (workflow, idempotency_key)`. That release is behind
 * (rolling upgrades start from the release before: docs/architecture.md, "Upgrades"). A keyed start writes one
 * index fewer, and `runs` keeps no unique index without its id: the last of them a partitioned `runs` could not
 * have. CONCURRENTLY, so outside a transaction; a second run finds nothing to drop.
 */
export class RunsIdempotencyIndexDropped1767500000000 implements MigrationInterface {
  name = 'RunsIdempotencyIndexDropped1767500000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_idempotency_key_idx`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // An index left invalid by an interrupted build is dropped and built again.
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_idempotency_key_idx`);
    await queryRunner.query(`CREATE UNIQUE INDEX CONCURRENTLY runs_idempotency_key_idx ON runs (workflow, idempotency_key) WHERE idempotency_key IS NOT NULL`);
  }
}
