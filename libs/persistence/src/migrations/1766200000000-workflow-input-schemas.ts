import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `workflows.input_schema`: the JSON Schema a workflow version's input must match (`inputSchema` in code), as its
 * workers last registered it; null: none declared (any JSON input). The coordinators read it into a cache of
 * theirs and check each start's input against it (apps/coordinator/src/workflows/input-schemas.service.ts); a
 * start never reads it. A nullable column without a default: adding it rewrites no row.
 */
export class WorkflowInputSchemas1766200000000 implements MigrationInterface {
  name = 'WorkflowInputSchemas1766200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workflows ADD COLUMN input_schema jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workflows DROP COLUMN input_schema`);
  }
}
