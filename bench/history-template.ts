// The template database of bench/history.ts: the migrated schema and a generated history (fill.ts), built once
// and kept; each measurement takes a file copy of it (BenchDatabase.create with a template).
import { createHash } from 'node:crypto';
import { readdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { ENTITIES, MIGRATIONS } from '../libs/persistence/src';
import { fillHistory, fillText, type HistoryShape } from './fill';
import { log, ROOT, round, SERVER_URL } from './support';

/** Disk a million generated runs take, with their tasks, transitions and indexes (measured at 1M: 1.3 GB). */
const BYTES_PER_MILLION_RUNS = 1.3e9;

export interface Template {
  name: string;
  bytes: number;
  /** How it was built: runs, build time, when (the database's comment, written when it was built). */
  built: string;
}

/**
 * Named after what it holds: the migrations' file names (a new migration, a new template), the fill's
 * statement and shape. A template from an older schema or fill is not dropped here; `history.ts` prints
 * how to list and drop them.
 */
function templateName(shape: HistoryShape): string {
  const migrations = readdirSync(join(ROOT, 'libs/persistence/src/migrations')).sort().join('\n');
  return `wf_history_${createHash('sha256')
    .update(`${migrations}\n${fillText(shape)}`)
    .digest('hex')
    .slice(0, 12)}`;
}

/** Free bytes on `/`, where this machine's PostgreSQL keeps its data (its directory is not readable to us). */
export const freeBytes = () => {
  const fs = statfsSync('/');
  return fs.bavail * fs.bsize;
};

export const gigabytes = (bytes: number) => `${round(bytes / 1e9, 1)} GB`;

async function describe(admin: Client, name: string): Promise<Template | undefined> {
  const { rows } = await admin.query(
    `SELECT pg_database_size(oid) AS bytes, shobj_description(oid, 'pg_database') AS built FROM pg_database WHERE datname = $1`,
    [name],
  );
  return rows[0] && { name, bytes: Number(rows[0].bytes), built: rows[0].built ?? 'unknown' };
}

/** Migrates an empty database the way the coordinator does at start (its migrations, in order). */
async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url, entities: ENTITIES, migrations: MIGRATIONS });
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  await dataSource.destroy();
}

/**
 * The template for `shape`, built now if there is none (or `rebuild`): into `<name>_building`, renamed into place
 * once filled and vacuumed, so an interrupted build is never taken for a template.
 */
export async function historyTemplate(shape: HistoryShape, rebuild: boolean): Promise<Template> {
  const name = templateName(shape);
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  try {
    const existing = await describe(admin, name);
    if (existing && !rebuild) {
      log(`history: reusing template ${name} (${gigabytes(existing.bytes)}; ${existing.built})`);
      return existing;
    }
    // The template, and one copy of it at a time, with a margin.
    const needed = 2.2 * (shape.runs / 1e6) * BYTES_PER_MILLION_RUNS;
    if (freeBytes() < needed)
      throw new Error(`history: ${gigabytes(freeBytes())} free on /, ${gigabytes(needed)} needed for ${shape.runs.toLocaleString()} runs and a copy`);
    const building = `${name}_building`;
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${building}`);
    const url = new URL(SERVER_URL);
    url.pathname = `/${building}`;
    log(`history: building template ${name} (${shape.runs.toLocaleString()} runs; ${gigabytes(freeBytes())} free on /)`);
    const client = new Client({ connectionString: url.toString() });
    let seconds: number;
    try {
      await migrate(url.toString());
      await client.connect();
      seconds = await fillHistory(client, shape);
    } catch (error) {
      await client.end();
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      throw error;
    }
    await client.end();
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    const built = `${shape.runs.toLocaleString()} runs finished ${shape.oldestDays} to ${shape.newestDays} days before ${new Date().toISOString()}, built in ${seconds} s`;
    await admin.query(`COMMENT ON DATABASE ${name} IS '${built}'`);
    const template = (await describe(admin, name))!;
    log(`history: template ${name} is ${gigabytes(template.bytes)}`);
    return template;
  } finally {
    await admin.end();
  }
}
