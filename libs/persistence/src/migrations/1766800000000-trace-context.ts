import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Trace context (issue 37, OpenTelemetry traces): `runs.traceparent` and `runs.tracestate`, the W3C trace context
 * of the span that started the run (a client's start request, or the parent's child step), set by the start
 * statements and handed to the worker with the run by claims, takes and hand-offs, so the worker's run span is a
 * child of it whatever transport carried the wake-up. NULL when the coordinator traced nothing at the start
 * (tracing off, the default). Nullable without a default: a catalog change only, no row of a large table is
 * rewritten; no index reads them.
 */
export class TraceContext1766800000000 implements MigrationInterface {
  name = 'TraceContext1766800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs ADD COLUMN traceparent text, ADD COLUMN tracestate text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE runs DROP COLUMN tracestate, DROP COLUMN traceparent`);
  }
}
