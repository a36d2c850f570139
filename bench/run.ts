// `npm run bench`: measures the engine as users deploy it (built coordinator and worker processes,
// PostgreSQL with fsync on) in each dispatch mode, against fresh databases and key prefixes.
// Writes bench/results/<timestamp>.{json,md} and bench/results/latest.md. With --scale: see scale.ts; with
// --history: history.ts.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { uuidv7Floor } from '../libs/persistence/src/ids';
import {
  api,
  BenchDatabase,
  CHAIN_STEPS,
  type LatencyColumns,
  latencyColumns,
  log,
  machineNow,
  MODES,
  type Mode,
  measureW2,
  measureW3a,
  type ProbeTimes,
  percentile,
  postgresCpuSeconds,
  type Proc,
  REDIS_URL,
  ROOT,
  round,
  type ShortLatencyColumns,
  shortLatency,
  startCoordinator,
  startInBatches,
  startWorker,
  until,
  W2_RUNS,
  W3A_CHAINS,
  WARMUP,
  WARMUP_CHAINS,
  WARMUP_PROBES,
  warmUp,
} from './support';
import { type FloorResult, floor } from './floor';
import { history } from './history';
import { scale } from './scale';

const W1_RUNS = 5_000;
const W3B_CHAINS = 200;
const W4_RUNS = 1_000;
const W4_FIRST_MS = 6_000;
const W4_SPREAD_MS = 3_000;

export interface Result extends LatencyColumns, ShortLatencyColumns {
  mode: string;
  w1DrainPerSecond: number;
  w1CreateDrainPerSecond: number;
  /** PostgreSQL's CPU over W1 (create and drain): cores kept busy, and runs per CPU-second of it (saturation). */
  w1DbCpuCores: number;
  w1RunsPerDbCpuSecond: number;
  /** The short phase again on fresh processes, on the database the workloads left (a deploy): the engine's only. */
  redeployW2StartP50?: number;
  redeployW2ResultP50?: number;
  redeployW3aP50?: number;
  w3bStepsPerSecond: number | null;
  w4LatenessP50: number | null;
  w4LatenessP99: number | null;
  w4LatenessMax: number | null;
  commitsPerRun: number;
  commitsPerStep: number | null;
  requestsPerRun: number;
  coordinatorPeakRssMb: number | null;
  workerPeakRssMb: number | null;
}

export interface BenchOptions {
  /** The database to run on (the caller's, who drops it), instead of a fresh one. */
  database?: BenchDatabase;
  /** More environment for the coordinator. */
  coordinatorEnv?: Record<string, string>;
  /** Workloads not to run (their fields are null). */
  skip?: ('W3b' | 'W4')[];
  /** W2's probes (W2_RUNS unless given): more where its p99 is compared, which 300 probes leave to 3 of them. */
  w2Runs?: number;
}

async function benchMode(mode: Mode, options: BenchOptions = {}): Promise<Result> {
  const db = options.database ?? (await BenchDatabase.create(mode));
  const skip = new Set(options.skip);
  // This measurement's runs: on a database that had runs before (a copy of bench/history.ts's template, or one
  // measured already), the counts and spans leave those out, and its chains' idempotency keys are its own.
  const since = Date.now();
  const ours = uuidv7Floor(since);
  let keys = `${since}-`;
  const prefix = `bench:${randomBytes(4).toString('hex')}:`;
  const redis = { REDIS_URL, REDIS_PREFIX: prefix };
  let coordinator: Proc | undefined;
  let worker: Proc | undefined;
  try {
    const started = await startCoordinator(db, mode === 'http' ? 'none' : mode, { ...redis, ...options.coordinatorEnv });
    coordinator = started.proc;
    let base = started.url;
    worker = await startWorker([base], mode, redis);
    const commits = () => db.commits();
    const requests = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Number(/^wf_http_requests_total (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const completed = (workflow: string) => db.completed(workflow, since);
    /** Seconds from the first start to the last finish of the `chain` runs that `where` selects. */
    const span = async (where: string) =>
      Number(
        (
          await db.client.query(
            `SELECT extract(epoch FROM max(finished_at) - min(started_at)) AS s FROM runs WHERE workflow = 'chain' AND id >= $1 AND ${where}`,
            [ours],
          )
        ).rows[0].s,
      );

    /** One W2 run: when its handler began, its start call returned and its result was in hand, in ms. */
    const probe = async (): Promise<ProbeTimes> => {
      const t0 = machineNow();
      const run = await api<{ id: string }>(base, 'POST', '/v1/runs', { workflow: 'probe', version: '1' });
      const started = machineNow();
      const done = await api<{ status: string; output: { startedAt: number } }>(base, 'GET', `/v1/runs/${run.id}/result?waitMs=10000`);
      const t1 = machineNow();
      if (done.status !== 'completed') throw new Error(`probe run ${run.id} is ${done.status}`);
      return { start: done.output.startedAt - t0, roundTrip: started - t0, result: t1 - t0 };
    };
    /** One W3a chain, started and waited for: its latency in ms. */
    const chain = async (key: string): Promise<number> => {
      const t0 = performance.now();
      const run = await api<{ id: string }>(base, 'POST', '/v1/runs', {
        workflow: 'chain',
        version: '1',
        input: { steps: CHAIN_STEPS },
        idempotencyKey: keys + key,
      });
      await api(base, 'GET', `/v1/runs/${run.id}/result?waitMs=20000`);
      return performance.now() - t0;
    };

    // What a fresh deployment meets: the one-at-a-time paths right after start, after a short warm-up.
    log(`${mode}: short warm-up, then W2 and W3a`);
    const short = await shortLatency(probe, chain);

    // Warm-up: JIT, connections, prepared plans.
    log(`${mode}: warm-up (${WARMUP} runs)`);
    await startInBatches(base, WARMUP, () => ({ workflow: 'echo', version: '1', input: 1 }));
    await until('warm-up', async () => (await completed('echo')) === WARMUP);

    // W1: 5,000 single-task runs created in bulk, drained by one worker at concurrency 50.
    log(`${mode}: W1 throughput (${W1_RUNS} single-task runs)`);
    const commitsBeforeW1 = await commits();
    const requestsBeforeW1 = await requests();
    const chainsBeforeW1 = await completed('chain');
    const benchBackend = [Number((await db.client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)];
    const dbCpuBeforeW1 = postgresCpuSeconds(benchBackend);
    const w1Start = performance.now();
    await startInBatches(base, W1_RUNS, () => ({ workflow: 'chain', version: '1', input: { steps: 1 } }));
    await until('W1 drained', async () => (await completed('chain')) === chainsBeforeW1 + W1_RUNS, 300_000);
    const w1Elapsed = (performance.now() - w1Start) / 1000;
    const w1DbCpu = postgresCpuSeconds(benchBackend) - dbCpuBeforeW1;
    const w1Drain = await span('idempotency_key IS NULL');
    const requestsPerRun = ((await requests()) - requestsBeforeW1 - 1) / W1_RUNS;
    const commitsPerRun = ((await commits()) - commitsBeforeW1) / W1_RUNS;

    // The database's first ANALYZE, as autovacuum makes it in a deployment's first minutes. Until then each session
    // keeps the generic plans it made on the empty tables of the short phase: a W3a chain took 22-34 ms in two
    // scratch runs of three, against 16-18 once they were planned again (docs/benchmarks.md, "Near the floor…"; that
    // was before the generic-plan sessions' random_page_cost, and the ANALYZE stays, as a deployment has it).
    await db.client.query('ANALYZE');
    log(`${mode}: warm-up of W2 and W3a (${WARMUP_PROBES} runs, ${WARMUP_CHAINS} chains)`);
    await warmUp(probe, chain, WARMUP_PROBES, WARMUP_CHAINS, 'long');

    // W2: one run at a time: start latency (request -> handler begins) and result latency.
    log(`${mode}: W2 idle latency (${options.w2Runs ?? W2_RUNS} runs one after another)`);
    const w2 = await measureW2(probe, options.w2Runs);

    // W3a: 10-step chains one after another; W3b: 200 at once.
    log(`${mode}: W3 chains (${W3A_CHAINS} sequential${skip.has('W3b') ? '' : `, ${W3B_CHAINS} concurrent`}, ${CHAIN_STEPS} steps)`);
    const w3a = await measureW3a(chain, 'w3a');
    let w3bStepsPerSecond: number | null = null;
    let commitsPerStep: number | null = null;
    if (!skip.has('W3b')) {
      const commitsBeforeW3b = await commits();
      const chainsBeforeW3b = await completed('chain');
      await api(base, 'POST', '/v1/runs/batch', {
        runs: Array.from({ length: W3B_CHAINS }, (_, i) => ({
          workflow: 'chain',
          version: '1',
          input: { steps: CHAIN_STEPS },
          idempotencyKey: `${keys}w3b-${i}`,
        })),
      });
      await until('W3b drained', async () => (await completed('chain')) === chainsBeforeW3b + W3B_CHAINS, 300_000);
      const w3bSteps = W3B_CHAINS * CHAIN_STEPS;
      w3bStepsPerSecond = round(w3bSteps / (await span(`idempotency_key LIKE '${keys}w3b-%'`)), 0);
      commitsPerStep = round(((await commits()) - commitsBeforeW3b) / w3bSteps, 2);
    }

    // W4: 1,000 runs sleeping 6 to 9 s (so they come due after the rush of their starts), due times spread
    // over a few seconds; lateness = when the handler resumed (the worker's clock) minus the sleep's wake
    // time (the database's; both are this machine's clock).
    let w4Lateness: number[] | null = null;
    if (!skip.has('W4')) {
      log(`${mode}: W4 timers (${W4_RUNS} sleepers, ${W4_FIRST_MS}-${W4_FIRST_MS + W4_SPREAD_MS} ms)`);
      await api(base, 'POST', '/v1/runs/batch', {
        runs: Array.from({ length: W4_RUNS }, (_, i) => ({
          workflow: 'sleepy',
          version: '1',
          input: { ms: W4_FIRST_MS + Math.round((i * W4_SPREAD_MS) / W4_RUNS) },
          idempotencyKey: `${keys}w4-${i}`,
        })),
      });
      await until('W4 done', async () => (await completed('sleepy')) === W4_RUNS, 120_000);
      const w4 = (
        await db.client.query<{ lateness: number; suspended_last: boolean }>(
          `SELECT (r.output->>'wokeAt')::float8 - extract(epoch FROM t.wake_at) * 1000 AS lateness,
                  t.wake_at > (SELECT max(created_at) FROM run_transitions WHERE to_status = 'waiting' AND run_id IN
                                 (SELECT id FROM runs WHERE workflow = 'sleepy' AND id >= $1)) AS suspended_last
             FROM runs r JOIN tasks t ON t.run_id = r.id AND t.kind = 'sleep'
            WHERE r.workflow = 'sleepy' AND r.id >= $1`,
          [ours],
        )
      ).rows;
      // The first wake-ups must come after the last run suspended, or W4 would measure the start rush.
      if (!w4.every((row) => row.suspended_last)) log(`${mode}: W4 warning: some runs came due before all had suspended`);
      w4Lateness = w4.map((row) => Number(row.lateness));
    }
    const coordinatorPeakRssMb = coordinator.peakRssMb();
    const workerPeakRssMb = worker.peakRssMb();

    // What a deploy meets: fresh processes again, on the database the runs above left (analysed, in use), after the
    // same short warm-up. Against the first short phase (fresh processes on a new database) it tells the processes'
    // first minute from the database's.
    log(`${mode}: a redeploy (fresh processes, the same database): short warm-up, then W2 and W3a`);
    await worker.stop();
    await coordinator.stop();
    const redeployed = await startCoordinator(db, mode === 'http' ? 'none' : mode, { ...redis, ...options.coordinatorEnv });
    coordinator = redeployed.proc;
    base = redeployed.url;
    worker = await startWorker([base], mode, redis);
    keys = `${since}-redeploy-`;
    const redeploy = await shortLatency(probe, chain);

    return {
      mode,
      w1DrainPerSecond: round(W1_RUNS / w1Drain, 0),
      w1CreateDrainPerSecond: round(W1_RUNS / w1Elapsed, 0),
      w1DbCpuCores: round(w1DbCpu / w1Elapsed, 2),
      w1RunsPerDbCpuSecond: round(W1_RUNS / w1DbCpu, 0),
      ...latencyColumns(w2, w3a),
      ...short,
      redeployW2StartP50: redeploy.shortW2StartP50,
      redeployW2ResultP50: redeploy.shortW2ResultP50,
      redeployW3aP50: redeploy.shortW3aP50,
      w3bStepsPerSecond,
      w4LatenessP50: w4Lateness && round(percentile(w4Lateness, 50), 2),
      w4LatenessP99: w4Lateness && round(percentile(w4Lateness, 99), 2),
      w4LatenessMax: w4Lateness && round(Math.max(...w4Lateness), 2),
      commitsPerRun: round(commitsPerRun, 2),
      commitsPerStep,
      requestsPerRun: round(requestsPerRun, 2),
      coordinatorPeakRssMb,
      workerPeakRssMb,
    };
  } finally {
    await worker?.stop();
    await coordinator?.stop();
    if (!options.database) await db.drop();
  }
}

/** A column of the table: an engine's, a peer's, or the floor's (which has W2 and W3a only; '–' elsewhere). */
type Column = Result | FloorResult;

function markdown(results: Column[], when: string): string {
  const rows: [string, (r: Partial<Result>) => number | string | null | undefined][] = [
    ['W1 drain (runs/s)', (r) => r.w1DrainPerSecond],
    ['W1 create+drain (runs/s)', (r) => r.w1CreateDrainPerSecond],
    ['W1 store CPU (PostgreSQL; BullMQ: Redis): cores busy / runs per CPU-second', (r) => `${r.w1DbCpuCores} / ${r.w1RunsPerDbCpuSecond}`],
    ['W2 start latency p50 / p95 / p99 (ms)', (r) => `${r.w2StartP50} / ${r.w2StartP95} / ${r.w2StartP99}`],
    ['W2 start call round trip p50 / p99 (ms)', (r) => `${r.startRoundTripP50} / ${r.startRoundTripP99}`],
    ['W2 result latency p50 / p99 (ms)', (r) => `${r.w2ResultP50} / ${r.w2ResultP99}`],
    ['W3a 10-step chain p50 / p95 (ms)', (r) => `${r.w3aP50} / ${r.w3aP95}`],
    ['short warm-up: W2 start / result p50, W3a p50 (ms)', (r) => `${r.shortW2StartP50} / ${r.shortW2ResultP50} / ${r.shortW3aP50}`],
    [
      'short warm-up after a redeploy (the same database): W2 start / result p50, W3a p50 (ms)',
      (r) => `${r.redeployW2StartP50} / ${r.redeployW2ResultP50} / ${r.redeployW3aP50}`,
    ],
    ['W3b chain steps/s (200 chains at once)', (r) => r.w3bStepsPerSecond],
    ['W4 timer lateness p50 / p99 / max (ms)', (r) => `${r.w4LatenessP50} / ${r.w4LatenessP99} / ${r.w4LatenessMax}`],
    ['PostgreSQL commits per single-task run (W1)', (r) => r.commitsPerRun],
    ['PostgreSQL commits per step (W3b)', (r) => r.commitsPerStep],
    ['HTTP requests per single-task run (W1)', (r) => r.requestsPerRun],
    ['peak RSS coordinator / worker (MB)', (r) => `${r.coordinatorPeakRssMb ?? '–'} / ${r.workerPeakRssMb ?? '–'}`],
  ];
  const header = `| measure | ${results.map((r) => r.mode).join(' | ')} |\n|---|${results.map(() => '---').join('|')}|\n`;
  const body = rows.map(([name, value]) => `| ${name} | ${results.map((r) => String(value(r)).replace(/null|undefined/g, '–')).join(' | ')} |`).join('\n');
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${round(totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`;
  return `Run ${when} on ${machine}.\n\n${header}${body}\n`;
}

/**
 * The same workloads on BullMQ, graphile-worker and DBOS, from the separate package in bench/peers
 * (installed from its own lockfile on first use). Its last line of output is the results as JSON.
 */
async function peers(): Promise<Result[]> {
  const dir = join(ROOT, 'bench', 'peers');
  const run = (command: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk;
        process.stdout.write(chunk);
      });
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}`))));
    });
  try {
    readFileSync(join(dir, 'node_modules', '.package-lock.json'));
  } catch {
    log('peers: installing bench/peers from its lockfile');
    await run('npm', ['ci', '--no-audit', '--no-fund']);
  }
  const output = await run(process.execPath, ['run-peers.mjs']);
  return JSON.parse(output.trim().split('\n').at(-1)!) as Result[];
}

async function main(): Promise<void> {
  if (process.argv.includes('--scale')) return scale(process.argv);
  if (process.argv.includes('--history')) return history(process.argv, benchMode);
  const modes = process.argv.includes('--mode') ? [process.argv[process.argv.indexOf('--mode') + 1] as Mode] : [...MODES];
  const results: Result[] = [];
  for (const mode of modes) {
    log(`${mode}: starting coordinator and worker`);
    const result = await benchMode(mode);
    log(`${mode}: ${JSON.stringify(result)}`);
    results.push(result);
  }
  const columns: Column[] = [...results];
  if (process.argv.includes('--peers')) {
    log('floor: the same hops with nothing else on them (bench/floor.ts)');
    columns.push(await floor(), ...(await peers()));
  }
  const when = new Date().toISOString();
  const table = markdown(columns, when);
  process.stdout.write(`\n${table}\n`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = when.replace(/[:.]/g, '-');
  writeFileSync(join(dir, `${stamp}.json`), JSON.stringify({ when, results: columns }, null, 2));
  writeFileSync(join(dir, `${stamp}.md`), table);
  writeFileSync(join(dir, 'latest.md'), table);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
