import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server tests run against; each suite gets its own database on it. */
export const TEST_SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  /** A connection for assertions that read or tamper with state directly. */
  sql<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A database of its own for `suite`: empty, or a copy of the database `template` (which no session may be connected to). */
export async function createTestDatabase(suite: string, options: { template?: string } = {}): Promise<TestDatabase> {
  const name = `wf_test_${suite.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: TEST_SERVER_URL });
  await admin.connect();
  await admin.query(options.template ? `CREATE DATABASE ${name} TEMPLATE ${options.template}` : `CREATE DATABASE ${name}`);
  await admin.end();
  const url = withDatabase(TEST_SERVER_URL, name);
  const client = new Client({ connectionString: url });
  await client.connect();
  // One connection: statements issued together (Promise.all in a test) run one after another on it.
  let previous: Promise<unknown> = Promise.resolve();
  return {
    url,
    name,
    sql<T>(text: string, values: unknown[] = []) {
      const result = previous.catch(() => undefined).then(async () => (await client.query(text, values)).rows as T[]);
      previous = result;
      return result;
    },
    async drop() {
      await client.end();
      const dropper = new Client({ connectionString: TEST_SERVER_URL });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}
