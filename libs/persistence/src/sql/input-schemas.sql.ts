import type { RegisteredWorkflow } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';

/*
 * The input schemas workflow versions declare in code (`workflows.input_schema`): written by registrations, read by
 * the coordinators' caches of them (InputSchemas), never by a start.
 */

const RECORD_DECLARED_INPUT_SCHEMAS = `UPDATE workflows w SET input_schema = d.schema
    FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS d(workflow, version, schema)
   WHERE w.workflow = d.workflow AND w.version = d.version AND w.input_schema IS DISTINCT FROM d.schema`;

/**
 * Records the input schemas workflow versions declare, as a worker registered them (in the registration's
 * transaction, after its versions were upserted). Writes only what changed (jsonb compares by value, whatever the
 * key order), so the registrations every few seconds cost a primary-key probe per version. A version registered
 * without one goes back to none. Two registrations of a version serialise on its row; the last one wins.
 */
export async function recordDeclaredInputSchemas(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<void> {
  await tx.query(RECORD_DECLARED_INPUT_SCHEMAS, [
    workflows.map((w) => w.name),
    workflows.map((w) => w.version),
    workflows.map((w) => jsonParam(w.inputSchema)),
  ]);
}

/** A registered workflow version's input schema (null: it declares none). */
export interface InputSchemaRow {
  workflow: string;
  version: string;
  inputSchema: Record<string, unknown> | null;
}

const FIND_INPUT_SCHEMAS = `SELECT w.workflow, w.version, w.input_schema AS "inputSchema"
    FROM unnest($1::text[], $2::text[]) AS k(workflow, version)
    JOIN workflows w ON w.workflow = k.workflow AND w.version = k.version`;

/**
 * The input schemas of these workflow versions, for those some worker registered (a version never registered
 * has no row). Primary-key probes, a read in its own snapshot: a registration committing meanwhile is seen at
 * the next read.
 */
export function findInputSchemas(db: SqlExecutor, versions: { workflow: string; version: string }[]): Promise<InputSchemaRow[]> {
  return db.query<InputSchemaRow>(FIND_INPUT_SCHEMAS, [versions.map((v) => v.workflow), versions.map((v) => v.version)]);
}
