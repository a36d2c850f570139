import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, TEST_SERVER_URL, type TestDatabase } from './support/database';
import { loadedOf, modulesLoadedBy } from './support/module-loading';
import { AppProcess, freePort, runCommand } from './support/processes';
import { buildPackages } from './support/packages';

const ROOT = join(__dirname, '..');
/** What the example names in its manifest (the test kit as a dev dependency); @nest-durable/common comes with them, as it would from the registry. */
const PACKAGES = ['client', 'workflow', 'worker', 'testing'];
const PACKED = ['common', ...PACKAGES];

/** What `npm pack --json` reports of each tarball. */
type Packed = { name: string; version: string; filename: string }[];

/**
 * Proof that a team can adopt the engine without forking it: examples/nest-app, outside the
 * monorepo's workspaces and path aliases, installs the three packages from the tarballs `npm pack`
 * makes (Nest and the rest from the npm cache or registry), compiles with its own strict tsconfig (its
 * service reads the typed output of the run it started by the workflow's class), and its worker runs its
 * own `@Workflow` class, which injects one of its services, end to end against a real coordinator.
 */
describe('an app outside the monorepo, on the packed packages', () => {
  let dir: string;
  let app: string;
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: AppProcess;
  let workerUrl: string;
  let packed: Packed;

  /** The app's own jest (a dev dependency) with its own config; --json: the results on stdout. */
  const exampleJest = async (env: Record<string, string>) =>
    JSON.parse(await runCommand(process.execPath, ['node_modules/jest/bin/jest.js', '--json'], { cwd: app, env }));

  const signUp = async (email: string) =>
    JSON.parse(await runCommand(process.execPath, ['dist/sign-up.js', email], { cwd: app, env: { COORDINATOR_URL: coordinator.url } }));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nest-durable-example-'));
    // Readable by all, as a project's folder is: as root, the embedded PostgreSQL runs as the `postgres` user, which
    // must reach its binaries in the app's node_modules (mkdtemp makes the folder its owner's only).
    chmodSync(dir, 0o755);
    app = join(dir, 'app');
    await buildPackages('testing'); // and the four before it
    packed = JSON.parse(await runCommand('npm', ['pack', ...PACKED.map((name) => `./packages/${name}`), '--pack-destination', dir, '--json']));

    cpSync(join(ROOT, 'examples/nest-app'), app, { recursive: true, filter: (source) => !/\/(node_modules|dist)$/.test(source) });
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    for (const { name, version, filename } of packed) {
      // The example names the very version packed here, as an app on the registry would; a package only the
      // others depend on is pointed at its tarball as an override.
      if (name === '@nest-durable/common') {
        manifest.overrides[name] = `file:${join(dir, filename)}`;
        continue;
      }
      const section = name === '@nest-durable/testing' ? manifest.devDependencies : manifest.dependencies;
      expect(section[name]).toBe(version);
      section[name] = `file:${join(dir, filename)}`;
    }
    writeFileSync(join(app, 'package.json'), JSON.stringify(manifest, null, 2));
    // Hundreds of packages: past a command's default limit when the suites beside it keep both cores busy.
    await runCommand('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, timeoutMs: 300_000 });
    await runCommand('npm', ['run', 'build'], { cwd: app });

    db = await createTestDatabase('example_app');
    coordinator = await startCoordinator(db.url);
    const port = await freePort();
    workerUrl = `http://127.0.0.1:${port}`;
    worker = new AppProcess(
      'example worker',
      'dist/main.js',
      { COORDINATOR_URL: coordinator.url, WORKER_ID: 'example-worker', PORT: String(port) },
      { cwd: app },
    );
    await worker.waitForOutput('worker ready');
  }, 480_000);

  afterAll(async () => {
    await worker?.stop();
    await coordinator?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('installs exactly the packed packages, no copy of them from elsewhere', () => {
    for (const name of PACKED) {
      const installed = JSON.parse(readFileSync(join(app, 'node_modules/@nest-durable', name, 'package.json'), 'utf8'));
      expect(installed).toMatchObject({ name: `@nest-durable/${name}`, version: '0.1.0' });
    }
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8'));
    const copies = Object.entries(lock.packages as Record<string, { resolved?: string }>)
      .filter(([path]) => path.includes('node_modules/@nest-durable/'))
      .map(([path, { resolved }]) => [path, resolved]);
    expect(copies.sort()).toEqual(packed.map(({ name, filename }) => [`node_modules/${name}`, `file:../${filename}`]).sort());
    // ioredis is an optional peer of the worker, needed only by its ./redis entry: an HTTP worker goes without. Only
    // the test kit (a dev dependency: it ships the coordinator, which loads it) brings it.
    expect(lock.packages['node_modules/ioredis']).toMatchObject({ devOptional: true });
  });

  it("runs the app's own workflow class on its worker, its service injected, started by its own service", async () => {
    const done = await signUp('alice@example.com');
    expect(done).toMatchObject({
      status: 'completed',
      attempt: 1,
      output: { accountId: expect.stringMatching(/^acct-[0-9a-f]{12}$/), mailed: expect.stringContaining('alice@example.com') },
    });
    // Read by the app from the typed output (no cast: its strict compile would refuse `output.accountId` otherwise).
    expect(done.accountId).toBe(done.output.accountId);
    expect(done.tasks.map((task: { name: string; status: string }) => [task.name, task.status])).toEqual([
      ['create-account', 'completed'],
      ['send-welcome-mail', 'completed'],
    ]);
    const takenBy = await db.sql<{ worker_id: string }>("SELECT DISTINCT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running'", [
      done.id,
    ]);
    expect(takenBy).toEqual([{ worker_id: 'example-worker' }]);
  });

  it("fails a run at once on the app's own nonRetryable error", async () => {
    const done = await signUp('not-an-address');
    expect(done).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: { name: 'InvalidEmailError', message: 'not an email address: not-an-address' },
      accountId: null,
    });
    expect(done.tasks).toEqual([expect.objectContaining({ name: 'create-account', status: 'failed', attempts: 1 })]);
  });

  it('serves the health and metrics its one import line mounts (WorkerOperationsModule, on Fastify)', async () => {
    const ready = await fetch(`${workerUrl}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', details: { consumer: { status: 'up' }, coordinator: { status: 'up' } } });
    const metrics = await fetch(`${workerUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    expect(text).toMatch(/^wf_worker_runs_active \d+$/m);
    expect(text).toMatch(/^wf_worker_runs_taken_total \d+$/m);
    expect(text).toContain('wf_process_cpu_seconds_total');
  });

  it("runs the app's own Jest tests from the installed test kit: AccountsService mocked, a 7-day sleep skipped, recorded histories replayed against a patched and an unpatched change", async () => {
    expect(await exampleJest({ DATABASE_URL: TEST_SERVER_URL })).toMatchObject({ success: true, numPassedTests: 3, numTotalTests: 3 });
  }, 120_000);

  it("ships the dashboard where the test kit's coordinator finds it", () => {
    // findBuiltDashboard looks for dist/dashboard in each folder above the coordinator's code: the package's own.
    expect(existsSync(join(app, 'node_modules/@nest-durable/testing/dist/dashboard/index.html'))).toBe(true);
  });

  it('runs it on an embedded PostgreSQL server without DATABASE_URL', async () => {
    expect(await exampleJest({ DATABASE_URL: '' })).toMatchObject({ success: true, numPassedTests: 3, numTotalTests: 3 });
  }, 120_000);

  it('loads no Nest, no ioredis and no worker runtime with the installed client', () => {
    const loaded = modulesLoadedBy('@nest-durable/client', { cwd: app });
    expect(loaded.files).toContain(join(app, 'node_modules/@nest-durable/client/dist/index.js'));
    expect(loadedOf(loaded, { requests: /^@nestjs\//, files: /\/node_modules\/@nestjs\// })).toEqual([]);
    expect(loadedOf(loaded, { requests: /^ioredis/, files: /\/node_modules\/ioredis\// })).toEqual([]);
    expect(loadedOf(loaded, { requests: /^@nest-durable\/worker/, files: /\/@nest-durable\/worker\// })).toEqual([]);
  });
});
