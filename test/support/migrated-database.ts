import { createHash, randomBytes } from 'node:crypto';
import { MIGRATIONS } from '@app/persistence';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createTestDatabase, TEST_SERVER_URL, type TestDatabase, withDatabase } from './database';
import { recordMigrations } from './recorded-migrations';

/**
 * A throwaway database (see createTestDatabase) with every migration of libs/persistence applied: a copy of a
 * template database migrated once per set of migrations, which is much faster than migrating each one.
 */
export async function createMigratedDatabase(suite: string): Promise<TestDatabase> {
  return createTestDatabase(suite, { template: await migratedTemplate() });
}

/** Applies every migration of libs/persistence to the database at `url`, as they run now (no template). */
export async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await dataSource.destroy();
  }
}

/**
 * The template: named after the SQL the migrations send (their `up` functions' source would miss a change to a
 * statement they keep in a constant), so a changed or added migration gets a template of its own. Made once
 * (under an advisory lock, so test processes running at once make it once) and named only when fully
 * migrated; it stays on the server for the next runs, and nothing connects to it after.
 */
async function migratedTemplate(): Promise<string> {
  const code = (await recordMigrations()).map(({ name, statements }) => [name, ...statements].join('\n')).join('\n');
  const template = `wf_template_${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
  const admin = new Client({ connectionString: TEST_SERVER_URL });
  await admin.connect();
  try {
    await admin.query(`SELECT pg_advisory_lock(hashtext($1))`, [template]);
    const [exists] = (await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [template])).rows;
    if (!exists) {
      const building = `wf_building_${randomBytes(4).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${building}`);
      await migrate(withDatabase(TEST_SERVER_URL, building));
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
    }
    return template;
  } finally {
    await admin.end(); // ends the session, and with it the advisory lock
  }
}
