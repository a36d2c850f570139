// The architecture's floor: W2 and W3a through the same four processes and the same hops as the engine (client →
// coordinator → PostgreSQL → coordinator → worker, and back), with nothing else on the path. A bare `node:http`
// server stands for the coordinator (one prepared statement a request, fsynced like ours; a start handed to the
// waiting claim, a finish waking the waiting result), a bare worker long-polls it through undici, and the client
// is undici too. No framework, no validation, no history, no flow control, no fencing: what no engine with this
// architecture can go below on this machine, and so what of our latency is ours to cut. It serves the engine's
// paths and statement names, so `npm run bench:timeline -- --floor` splits it into the same hops.
// `npm run bench -- --peers` runs it beside the peers (its own column); alone:
//   node -r ./scripts/register-ts.js bench/floor.ts          (a fresh database on DATABASE_URL's server)
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Pool } from 'pg';
import { Agent } from 'undici';
import {
  BenchDatabase,
  CHAIN_STEPS,
  freePort,
  type LatencyColumns,
  latencyColumns,
  log,
  machineNow,
  measureW2,
  measureW3a,
  type ProbeTimes,
  Proc,
  ROOT,
  round,
  type ShortLatencyColumns,
  shortLatency,
  W2_RUNS,
  W3A_CHAINS,
  WARMUP_CHAINS,
  WARMUP_PROBES,
  warmUp,
} from './support';

const SCHEMA = `CREATE TABLE runs (id uuid PRIMARY KEY, workflow text NOT NULL, status text NOT NULL, input jsonb, output jsonb,
                                   created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz);
                CREATE TABLE tasks (run_id uuid NOT NULL REFERENCES runs, seq integer NOT NULL, output jsonb, PRIMARY KEY (run_id, seq))`;
const START = { name: 'wf_start_floor', text: `INSERT INTO runs (id, workflow, status, input) VALUES ($1, $2, 'running', $3)` };
const STEP = { name: 'wf_record_floor', text: 'INSERT INTO tasks (run_id, seq, output) VALUES ($1, $2, $3)' };
const FINISH = { name: 'wf_finish_floor', text: `UPDATE runs SET status = 'completed', output = $2, finished_at = now() WHERE id = $1 AND status = 'running'` };

const agent = new Agent({ pipelining: 1, connections: null });

async function call<T>(base: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const response = await agent.request({
    origin: base,
    path,
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.body.text();
  if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
  return JSON.parse(text) as T;
}

type Report = { type: 'task'; runId: string; seq: number; output: unknown } | { type: 'complete'; runId: string; output: unknown };

/** The stand-in coordinator. */
function serve(databaseUrl: string, port: number): void {
  const pool = new Pool({ connectionString: databaseUrl, max: 4 });
  const claims: ServerResponse[] = [];
  const queued: object[] = [];
  const results = new Map<string, ServerResponse>();
  const finished = new Map<string, unknown>();
  const send = (response: ServerResponse, value: unknown, status = 200) => {
    const body = JSON.stringify(value);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  };
  const read = async (request: IncomingMessage): Promise<Record<string, unknown>> => {
    let text = '';
    for await (const chunk of request) text += chunk;
    return text ? JSON.parse(text) : {};
  };
  const start = async (request: IncomingMessage, response: ServerResponse) => {
    const { workflow, input } = await read(request);
    const run = { id: randomUUID(), workflow, input };
    await pool.query({ ...START, values: [run.id, workflow, JSON.stringify(input ?? null)] });
    const claim = claims.shift();
    if (claim) send(claim, { runs: [run] });
    else queued.push(run);
    send(response, { id: run.id }, 201);
  };
  const claim = async (_request: IncomingMessage, response: ServerResponse) => {
    const run = queued.shift();
    if (run) send(response, { runs: [run] });
    else claims.push(response);
  };
  const report = async (request: IncomingMessage, response: ServerResponse) => {
    const [one] = (await read(request)).reports as Report[];
    if (one.type === 'task') {
      await pool.query({ ...STEP, values: [one.runId, one.seq, JSON.stringify(one.output)] });
      return send(response, { outcomes: [{ ok: true }] });
    }
    await pool.query({ ...FINISH, values: [one.runId, JSON.stringify(one.output)] });
    send(response, { outcomes: [{ ok: true }] });
    const waiting = results.get(one.runId);
    results.delete(one.runId);
    if (waiting) send(waiting, { status: 'completed', output: one.output });
    else finished.set(one.runId, one.output);
  };
  const result = async (id: string, response: ServerResponse) => {
    if (finished.has(id)) send(response, { status: 'completed', output: finished.get(id) });
    else results.set(id, response);
    finished.delete(id);
  };
  createServer((request, response) => {
    const path = request.url!.split('?')[0];
    const runResult = /^\/v1\/runs\/([^/]+)\/result$/.exec(path);
    const handled =
      request.method === 'POST' && path === '/v1/runs'
        ? start(request, response)
        : request.method === 'POST' && path === '/v1/worker/claims'
          ? claim(request, response)
          : request.method === 'POST' && path === '/v1/worker/reports'
            ? report(request, response)
            : request.method === 'GET' && runResult
              ? result(runResult[1], response)
              : Promise.resolve(void response.writeHead(404).end());
    handled.catch((error: Error) => response.writeHead(500).end(error.message));
  }).listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
}

/** The stand-in worker: one claim waiting at a time; a `chain` run's steps one after another, then its result. */
async function work(base: string): Promise<void> {
  const reportOne = (report: Report) => call(base, 'POST', '/v1/worker/reports', { reports: [report] });
  for (;;) {
    const { runs } = await call<{ runs: { id: string; workflow: string; input: { steps?: number } }[] }>(base, 'POST', '/v1/worker/claims', {});
    for (const run of runs) {
      void (async () => {
        const startedAt = machineNow();
        const steps = run.workflow === 'chain' ? (run.input?.steps ?? 0) : 0;
        for (let seq = 1; seq <= steps; seq++) await reportOne({ type: 'task', runId: run.id, seq, output: seq });
        await reportOne({ type: 'complete', runId: run.id, output: { startedAt } });
      })();
    }
  }
}

/** The stand-in coordinator and worker on a fresh database, started; `url` is the coordinator's. */
export async function startFloor(): Promise<{ url: string; coordinator: Proc; worker: Proc; stop(): Promise<void> }> {
  const db = await BenchDatabase.create('floor');
  await db.client.query(SCHEMA);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const typescript = ['-r', join(ROOT, 'scripts/register-ts.js')];
  const coordinator = new Proc('bench/floor.ts', { FLOOR_ROLE: 'coordinator', DATABASE_URL: db.url, FLOOR_PORT: String(port) }, typescript);
  const stop = async (worker?: Proc) => {
    await worker?.stop();
    await coordinator.stop();
    await db.drop();
  };
  const deadline = Date.now() + 30_000;
  while (!coordinator.output.includes('ready')) {
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the stand-in coordinator did not start:\n${coordinator.output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const worker = new Proc('bench/floor.ts', { FLOOR_ROLE: 'worker', FLOOR_URL: url }, typescript);
  return { url, coordinator, worker, stop: () => stop(worker) };
}

/** W2's and W3a's columns of the bench's table for the floor (it runs no other workload). */
export interface FloorResult extends LatencyColumns, ShortLatencyColumns {
  mode: 'floor';
}

export async function floor(): Promise<FloorResult> {
  const { url, coordinator, worker, stop } = await startFloor();
  try {
    const probe = async (): Promise<ProbeTimes> => {
      const t0 = machineNow();
      const { id } = await call<{ id: string }>(url, 'POST', '/v1/runs', { workflow: 'probe' });
      const started = machineNow();
      const { output } = await call<{ output: { startedAt: number } }>(url, 'GET', `/v1/runs/${id}/result`);
      return { start: output.startedAt - t0, roundTrip: started - t0, result: machineNow() - t0 };
    };
    const chain = async () => {
      const t0 = performance.now();
      const { id } = await call<{ id: string }>(url, 'POST', '/v1/runs', { workflow: 'chain', input: { steps: CHAIN_STEPS } });
      await call(url, 'GET', `/v1/runs/${id}/result`);
      return performance.now() - t0;
    };
    const short = await shortLatency(probe, chain);
    await warmUp(probe, chain, WARMUP_PROBES, WARMUP_CHAINS, 'long');
    // CPU milliseconds of the stand-in coordinator and worker per run (per chain) over `count` of them, from /proc.
    const cpu = async <T>(count: number, measure: () => Promise<T>): Promise<{ values: T; cpu: string }> => {
      const before = [coordinator.cpuSeconds(), worker.cpuSeconds()];
      const values = await measure();
      const [c, w] = [coordinator.cpuSeconds() - before[0], worker.cpuSeconds() - before[1]].map((seconds) => round((seconds * 1000) / count, 2));
      return { values, cpu: `CPU ${c} ms coordinator, ${w} ms worker` };
    };
    const w2 = await cpu(W2_RUNS, () => measureW2(probe));
    const w3a = await cpu(W3A_CHAINS, () => measureW3a(chain, 'w3a'));
    log(`floor: ${w2.cpu} a W2 run; ${w3a.cpu} a W3a chain`);
    return { mode: 'floor', ...latencyColumns(w2.values, w3a.values), ...short };
  } finally {
    await stop();
    await agent.close();
  }
}

if (process.env.FLOOR_ROLE === 'coordinator') serve(process.env.DATABASE_URL!, Number(process.env.FLOOR_PORT));
else if (process.env.FLOOR_ROLE === 'worker') void work(process.env.FLOOR_URL!);
else if (require.main === module) void floor().then((result) => log(`floor: ${JSON.stringify(result)}`));
