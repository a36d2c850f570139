import type { RegisteredWorkflow } from '@nest-durable/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createSqlTestDatabase, holdTransaction, type SqlTestDatabase } from '../../../../test/support/sql-database';
import { findInputSchemas, recordDeclaredInputSchemas } from './input-schemas.sql';

describe('input-schemas.sql', () => {
  let db: SqlTestDatabase;
  const schema = { type: 'object', required: ['email'], properties: { email: { type: 'string' } } };
  const rows = () =>
    db.sql<{ workflow: string; input_schema: unknown; xmin: string }>(`SELECT workflow, input_schema, xmin::text FROM workflows ORDER BY workflow`);

  beforeAll(async () => {
    db = await createSqlTestDatabase('input_schemas_sql');
  });

  beforeEach(async () => {
    await db.sql(`TRUNCATE workflows`);
    await db.sql(`INSERT INTO workflows (workflow, version) VALUES ('a', '1'), ('b', '1')`);
  });

  afterAll(async () => {
    await db?.close();
  });

  it('records the schemas versions declare, writing only what changed; one registered without clears it', async () => {
    const declared: RegisteredWorkflow[] = [
      { name: 'a', version: '1', shards: [], inputSchema: schema },
      { name: 'b', version: '1', shards: [] },
    ];
    await recordDeclaredInputSchemas(db.db, declared);
    const recorded = await rows();
    expect(recorded.map((row) => [row.workflow, row.input_schema])).toEqual([
      ['a', schema],
      ['b', null],
    ]);
    // The same schema with its keys in another order is the same jsonb: nothing is written.
    const reordered = { properties: { email: { type: 'string' } }, required: ['email'], type: 'object' };
    await recordDeclaredInputSchemas(db.db, [{ ...declared[0], inputSchema: reordered }, declared[1]]);
    expect(await rows()).toEqual(recorded);
    await recordDeclaredInputSchemas(db.db, [{ name: 'a', version: '1', shards: [] }]);
    expect((await rows())[0].input_schema).toBeNull();
  });

  it('serialises two registrations of a version on its row: the last one wins', async () => {
    const first = await holdTransaction(db.db, (tx) => recordDeclaredInputSchemas(tx, [{ name: 'a', version: '1', shards: [], inputSchema: schema }]));
    const second = recordDeclaredInputSchemas(db.db, [{ name: 'a', version: '1', shards: [], inputSchema: { type: 'string' } }]);
    await db.someoneWaitsForALock();
    await first.commit();
    await second;
    expect((await rows())[0].input_schema).toEqual({ type: 'string' });
  });

  it('finds the schemas of the versions asked that some worker registered', async () => {
    await db.sql(`UPDATE workflows SET input_schema = $1 WHERE workflow = 'a'`, [JSON.stringify(schema)]);
    const found = await findInputSchemas(db.db, [
      { workflow: 'a', version: '1' },
      { workflow: 'b', version: '1' },
      { workflow: 'a', version: '2' },
      { workflow: 'never', version: '1' },
    ]);
    expect(found.sort((x, y) => x.workflow.localeCompare(y.workflow))).toEqual([
      { workflow: 'a', version: '1', inputSchema: schema },
      { workflow: 'b', version: '1', inputSchema: null },
    ]);
    expect(await findInputSchemas(db.db, [])).toEqual([]);
  });
});
