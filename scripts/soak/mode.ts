import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import { freePort } from '../../test/support/processes';
import { type CheckFigures, checkRuns, checkWorkersTakeWork } from './checks';
import { ModeCluster, type Servers } from './cluster';
import { FaultInjector, planFaults } from './faults';
import { RunStarter } from './load';
import { type Mode, type SoakOptions, TIMING } from './options';
import { LONG_STEP_MS, planRuns, random } from './plan';
import { liveTakeovers, measureRecovery, type Recovery } from './recovery';
import { readState, type SoakState } from './state';
import { tail, type Violations } from './violations';

export interface ModeResult {
  mode: Mode;
  figures?: CheckFigures;
  recoveries: Recovery[];
  takeovers?: { total: number; unexplained: number };
  /** Start to finish of the short runs (how loaded the engine was, for reading the recovery times). */
  shortRunMs?: number[];
  /** Outbox rows and Streams wake-ups given up on (dead-lettered) during this mode. */
  deadLetters?: { outbox: number; stream: number };
  /** "deadlock detected" in the PostgreSQL log while this mode ran. */
  deadlocks: number;
  failedStarts: number;
  startErrors: string;
  wallMs: number;
}

/** A worker that lived through this much of the end of the load must have taken a run in it. */
const IDLE_WORKER_WINDOW_MS = 10_000;
/** Violations of one kind shown with their evidence (the rest are counted). */
const EVIDENCE_PER_CHECK = 3;

const log = (message: string) => process.stdout.write(`[soak] ${message}\n`);

/** Soaks one mode: its own database, coordinator and workers; load and faults; then the checks. */
export async function soakMode(
  mode: Mode,
  options: SoakOptions,
  servers: Servers,
  workDir: string,
  violations: Violations,
  signal: AbortSignal,
): Promise<ModeResult> {
  const began = Date.now();
  const postgres = servers.postgres!;
  await servers.replicatePostgres();
  const database = `soak_${mode.replace(/-/g, '_')}`;
  await adminQuery(postgres.primaryUrl('postgres'), `CREATE DATABASE ${database}`);
  // The coordinator's names both servers and follows the primary; the soak's own statements go to the primary of the moment.
  const coordinatorDatabaseUrl = postgres.url(database);
  const databaseUrl = () => postgres.primaryUrl(database);
  const dir = join(workDir, mode);
  const journalDir = join(dir, 'journal');
  mkdirSync(journalDir, { recursive: true });
  const redisUrl = mode === 'http' ? 'redis://127.0.0.1:1' : (await servers.startRedis()).url;
  const port = await freePort();
  const cluster = new ModeCluster(
    mode,
    `http://127.0.0.1:${port}`,
    { port, databaseUrl: coordinatorDatabaseUrl, redisUrl, journalDir, concurrency: options.concurrency },
    servers.watchdog,
    violations,
  );
  const plan = planRuns(`soak-${mode}`, options.runs, options.rate, options.seed);
  const loadMs = plan.at(-1)!.atMs;
  const deadlocksBefore = countDeadlocks(postgres.output);
  const result: ModeResult = { mode, recoveries: [], deadlocks: 0, failedStarts: 0, startErrors: '', wallMs: 0 };
  const starter = new RunStarter(cluster.coordinatorUrl, plan, violations);
  let loadEnd = Infinity;
  const injector = new FaultInjector(cluster, servers, databaseUrl, random(options.seed + 1), violations);
  try {
    await cluster.startCoordinator();
    await Promise.all(Array.from({ length: options.workers }, () => cluster.startWorker()));
    log(`${mode}: ${plan.length} runs over ${Math.round(loadMs / 1000)} s with faults`);
    const startedAt = Date.now();
    const progress = setInterval(
      () => log(`${mode}: ${Math.round((Date.now() - startedAt) / 1000)} s, ${starter.ids.size}/${plan.length} started, ${injector.injected.length} faults`),
      20_000,
    );
    // The faults may go on past the last start (a short load): the last start ends the load.
    const starting = starter.run(startedAt, signal).then(() => (loadEnd = Date.now()));
    await Promise.all([starting, injector.run(planFaults(mode, loadMs), startedAt, signal)]).finally(() => clearInterval(progress));
    if (signal.aborted) return result;
    const drained = await drain(databaseUrl, plan.length, signal);
    if (!drained.done && !signal.aborted) {
      violations.add(
        'every run completes',
        `${plan.length - drained.finished} of ${plan.length} runs still unfinished ${drained.waitedMs} ms after the last start`,
      );
    }
  } finally {
    await cluster.stop();
    result.deadlocks = countDeadlocks(postgres.output) - deadlocksBefore;
    result.failedStarts = starter.failedRequests;
    result.startErrors = starter.errorSummary();
    writeFileSync(join(dir, 'faults.json'), JSON.stringify(injector.injected, null, 2));
    for (const app of cluster.processes) writeFileSync(join(dir, `${app.name}.log`), app.output);
  }
  if (signal.aborted) return result;

  const state = await readState(databaseUrl(), journalDir);
  result.deadLetters = await countDeadLetters(databaseUrl());
  writeFileSync(
    join(dir, 'runs.json'),
    JSON.stringify(state.runs.map((run) => ({ ...run, steps: state.steps.get(run.id), transitions: state.transitions.get(run.id) }))),
  );
  result.figures = checkRuns(plan, state, violations);
  const longKeys = new Set(plan.filter((run) => run.input.stepMs >= LONG_STEP_MS).map((run) => run.key));
  const longRuns = new Set(state.runs.filter((run) => longKeys.has(run.key ?? '')).map((run) => run.id));
  result.shortRunMs = state.runs.filter((run) => !longRuns.has(run.id) && run.finishedAt !== null).map((run) => run.finishedAt! - run.createdAt);
  result.recoveries = measureRecovery(injector.injected, state.runs, state.transitions, options.rate, longRuns);
  result.takeovers = liveTakeovers(state.transitions, injector.injected, TIMING.stopMs);
  for (const worker of checkWorkersTakeWork(cluster.lifetimes, state.transitions, loadEnd, IDLE_WORKER_WINDOW_MS)) {
    const app = cluster.processes.find((candidate) => candidate.name === worker)!;
    violations.add('every worker keeps taking work', `${worker} took no run in the last ${IDLE_WORKER_WINDOW_MS / 1000} s of the load`, [
      `${worker}:\n${tail(app.output)}`,
    ]);
  }
  attachEvidence(violations, cluster, state);
  result.wallMs = Date.now() - began;
  log(`${mode}: done in ${Math.round(result.wallMs / 1000)} s, ${violations.in(mode).length} violations`);
  return result;
}

/** Waits until every run is terminal; gives up after 60 s without progress. */
async function drain(databaseUrl: () => string, total: number, signal: AbortSignal): Promise<{ done: boolean; finished: number; waitedMs: number }> {
  const began = Date.now();
  let [finished, progressAt] = [-1, Date.now()];
  while (!signal.aborted && Date.now() - progressAt < 60_000) {
    const [row] = await adminQuery<{ n: number }>(
      databaseUrl(),
      `SELECT count(*)::int AS n FROM runs WHERE workflow = 'soak' AND status IN ('completed', 'failed', 'cancelled')`,
    ).catch(() => [{ n: finished }]);
    if (row.n >= total) return { done: true, finished: row.n, waitedMs: Date.now() - began };
    if (row.n > finished) [finished, progressAt] = [row.n, Date.now()];
    await delay(500, undefined, { signal }).catch(() => undefined);
  }
  return { done: false, finished, waitedMs: Date.now() - began };
}

async function adminQuery<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Dead letters of each origin (all of them are kept in PostgreSQL). */
async function countDeadLetters(databaseUrl: string): Promise<{ outbox: number; stream: number }> {
  const [counts] = await adminQuery<{ outbox: number; stream: number }>(
    databaseUrl,
    `SELECT count(*) FILTER (WHERE origin = 'outbox')::int AS outbox, count(*) FILTER (WHERE origin = 'stream')::int AS stream FROM dead_letters`,
  );
  return counts;
}

function countDeadlocks(log: string): number {
  return log.match(/deadlock detected/g)?.length ?? 0;
}

/** Adds, to the first violations of each kind about a run, its history and the lines of this mode's logs that name it. */
function attachEvidence(violations: Violations, cluster: ModeCluster, state: SoakState): void {
  const shown = new Map<string, number>();
  for (const violation of violations.in(cluster.mode)) {
    const runId = /run ([0-9a-f]{8}-[0-9a-f-]{27})/.exec(violation.message)?.[1];
    const count = (shown.get(violation.check) ?? 0) + 1;
    if (!runId || count > EVIDENCE_PER_CHECK) continue;
    shown.set(violation.check, count);
    const history = (state.transitions.get(runId) ?? []).map(
      (t) => `${new Date(t.at).toISOString()} ${t.from ?? 'NULL'}→${t.to}@${t.revision} ${t.workerId ?? ''}`,
    );
    const steps = (state.steps.get(runId) ?? []).map((step) => `${step.key} ${step.status} ${JSON.stringify(step.output)}`);
    const lines = cluster.processes.flatMap((app) =>
      app.output
        .split('\n')
        .filter((line) => line.includes(runId))
        .map((line) => `${app.name}: ${line.slice(0, 400)}`),
    );
    violation.evidence.push(
      `transitions:\n${history.join('\n')}`,
      `steps:\n${steps.join('\n')}`,
      lines.length > 0 ? lines.slice(0, 30).join('\n') : `no process logged ${runId}`,
    );
  }
}
