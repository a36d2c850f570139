// `npm run bench:timeline`: where the time of one run goes, hop by hop. Starts the built coordinator and one
// worker as the bench does, warms up, then runs W2 (one `probe` run at a time) and W3a (one 10-step chain at a
// time) while `tcpdump -i lo` records every loopback packet with a payload; each hop is the time between two
// packets (HTTP between client, coordinator and worker; the PostgreSQL protocol), medians over the runs.
// With `-- --floor`, the same for bench/floor.ts's stand-ins; with `-- --mode redis-zset` (or redis-streams), the
// engine in that dispatch mode, whose start publishes its wake-up to Redis, which a worker takes. Needs tcpdump and the right
// to capture (root); see docs/benchmarks.md, "What binds now".
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { startFloor } from './floor';
import { randomBytes } from 'node:crypto';
import {
  BenchDatabase,
  api,
  log,
  MODES,
  type Mode,
  machineNow,
  median,
  type Proc,
  REDIS_URL,
  round,
  startCoordinator,
  startInBatches,
  startWorker,
  until,
  WARMUP,
  WARMUP_CHAINS,
  WARMUP_PROBES,
} from './support';

const W2_RUNS = Number(process.env.TIMELINE_RUNS ?? 300);
const W3A_CHAINS = Number(process.env.TIMELINE_CHAINS ?? 50);
const PG_PORT = 5432;
const REDIS_PORT = Number(new URL(REDIS_URL).port || 6379);
const MODE: Mode = process.argv.includes('--mode') ? (process.argv[process.argv.indexOf('--mode') + 1] as Mode) : 'http';

interface Packet {
  at: number;
  from: number;
  to: number;
  text: string;
}

const now = () => performance.timeOrigin + performance.now();
const base = (port: number) => `http://127.0.0.1:${port}`;

/** Packets with a payload on the loopback interface to and from the coordinator's port, PostgreSQL's (and Redis's in its modes), while `work` runs. */
async function captured(port: number, work: () => Promise<void>): Promise<Packet[]> {
  const ports = [port, PG_PORT, ...(MODE === 'http' ? [] : [REDIS_PORT])].map((p) => `port ${p}`).join(' or ');
  const filter = `tcp and (${ports}) and (tcp[tcpflags] & tcp-push != 0)`;
  // 400 bytes: enough for a Redis reply to reach the run id it carries.
  const dump: ChildProcess = spawn('tcpdump', ['-i', 'lo', '-nn', '-tt', '-l', '-A', '-s', '400', filter], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  dump.stdout!.on('data', (chunk) => (out += chunk));
  let listening = false;
  dump.stderr!.on('data', (chunk) => (listening ||= String(chunk).includes('listening')));
  await until('tcpdump to listen', async () => listening, 10_000);
  try {
    await work();
  } finally {
    const exited = new Promise((resolve) => dump.once('exit', resolve));
    dump.kill('SIGINT');
    await exited;
  }
  const packets: Packet[] = [];
  const lines = out.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = /^(\d+\.\d+) IP 127\.0\.0\.1\.(\d+) > 127\.0\.0\.1\.(\d+):/.exec(lines[i]);
    if (!head) continue;
    let text = '';
    for (let j = i + 1; j < lines.length && !/^\d+\.\d+ IP /.test(lines[j]); j++) text += lines[j];
    packets.push({ at: Number(head[1]) * 1000, from: Number(head[2]), to: Number(head[3]), text });
  }
  return packets;
}

/** Names each connection to the coordinator by who opened it: the worker (its API is under /v1/worker) or the client. */
function roles(packets: Packet[], port: number): Map<number, 'worker' | 'client'> {
  const byPort = new Map<number, 'worker' | 'client'>();
  for (const packet of packets) {
    const request = packet.to === port && /(?:GET|POST|PUT|DELETE) (\/\S*)/.exec(packet.text);
    if (request && !byPort.has(packet.from)) byPort.set(packet.from, request[1].startsWith('/v1/worker') ? 'worker' : 'client');
  }
  return byPort;
}

class Hops {
  private readonly values = new Map<string, number[]>();

  add(hop: string, ms: number | undefined): void {
    if (ms === undefined || !Number.isFinite(ms)) return;
    const values = this.values.get(hop) ?? [];
    values.push(ms);
    this.values.set(hop, values);
  }

  print(title: string): void {
    log(title);
    for (const [hop, values] of this.values) log(`  ${hop.padEnd(48)} ${round(median(values), 3)} ms (${values.length})`);
  }
}

/** W2: start, handler begins, result; hops of the start and of the result. */
async function w2(port: number): Promise<void> {
  const marks: { id: string; t0: number; began: number; t1: number }[] = [];
  const packets = await captured(port, async () => {
    for (let i = 0; i < W2_RUNS; i++) {
      const t0 = now();
      const run = await api<{ id: string }>(base(port), 'POST', '/v1/runs', { workflow: 'probe', version: '1' });
      const done = await api<{ output: { startedAt: number } }>(base(port), 'GET', `/v1/runs/${run.id}/result?waitMs=10000`);
      // The handler's start is on the machine's monotonic clock (see machineNow); the packets' times are epoch.
      marks.push({ id: run.id, t0, began: done.output.startedAt + (now() - machineNow()), t1: now() });
    }
  });
  const role = roles(packets, port);
  const toClient = (p: Packet) => p.from === port && role.get(p.to) === 'client';
  const toWorker = (p: Packet) => p.from === port && role.get(p.to) === 'worker';
  const hops = new Hops();
  for (const { id, t0, began, t1 } of marks) {
    const run = packets.filter((p) => p.at >= t0 && p.at <= t1);
    const after = (at: number | undefined, match: (p: Packet) => boolean) => (at === undefined ? undefined : run.find((p) => p.at >= at && match(p)));
    const start = after(t0, (p) => p.to === port && p.text.includes('POST /v1/runs HTTP'));
    const statement = after(start?.at, (p) => p.to === PG_PORT);
    const answer = after(statement?.at, (p) => p.from === PG_PORT && p.to === statement?.from);
    const created = after(answer?.at, (p) => toClient(p) && p.text.includes('HTTP/1.1 201'));
    hops.add('client: its clock -> the start request', start && start.at - t0);
    hops.add('coordinator: request -> start statement', statement && start && statement.at - start.at);
    hops.add('PostgreSQL: start statement -> answer', answer && statement && answer.at - statement.at);
    if (MODE === 'http') {
      const claimAnswer = after(answer?.at, (p) => toWorker(p) && p.text.includes('HTTP/1.1 200'));
      hops.add("coordinator: answer -> the claim's answer", claimAnswer && answer && claimAnswer.at - answer.at);
      hops.add('coordinator: answer -> the 201', created && answer && created.at - answer.at);
      hops.add("worker: the claim's answer -> handler begins", claimAnswer && began - claimAnswer.at);
    } else {
      // The start's own publish (its wake-up names the run), the wake-up's delivery (the reply carrying the run's id), the take.
      const published = after(answer?.at, (p) => p.to === REDIS_PORT && p.text.includes(id));
      const delivered = after(published?.at, (p) => p.from === REDIS_PORT && p.text.includes(id));
      const take = after(delivered?.at, (p) => p.to === port && p.text.includes('POST /v1/worker/takes'));
      const takeStatement = after(take?.at, (p) => p.to === PG_PORT && p.text.includes('wf_claim'));
      const takeAnswer = after(takeStatement?.at, (p) => p.from === PG_PORT && p.to === takeStatement?.from);
      const taken = after(takeAnswer?.at, (p) => toWorker(p) && p.text.includes('HTTP/1.1 200'));
      hops.add('coordinator: answer -> the 201', created && answer && created.at - answer.at);
      hops.add('coordinator: answer -> publish to Redis', published && answer && published.at - answer.at);
      hops.add('Redis: publish -> the wake-up at the worker', delivered && published && delivered.at - published.at);
      hops.add('worker: the wake-up -> its take', take && delivered && take.at - delivered.at);
      hops.add('coordinator: take -> its statement', takeStatement && take && takeStatement.at - take.at);
      hops.add('PostgreSQL: take statement -> answer', takeAnswer && takeStatement && takeAnswer.at - takeStatement.at);
      hops.add("coordinator: answer -> the take's answer", taken && takeAnswer && taken.at - takeAnswer.at);
      hops.add("worker: the take's answer -> handler begins", taken && began - taken.at);
    }
    hops.add('= start latency', began - t0);
    const report = after(began, (p) => p.to === port && p.text.includes('POST /v1/worker/reports'));
    const finish = after(report?.at, (p) => p.to === PG_PORT && p.text.includes('wf_finish'));
    const finished = after(finish?.at, (p) => p.from === PG_PORT && p.to === finish?.from);
    const result = after(finished?.at, (p) => toClient(p) && p.text.includes('HTTP/1.1 200'));
    hops.add('worker: handler -> its report', report && report.at - began);
    hops.add('coordinator: report -> finish statement', finish && report && finish.at - report.at);
    hops.add('PostgreSQL: finish statement -> answer', finished && finish && finished.at - finish.at);
    hops.add('coordinator: answer -> the result', result && finished && result.at - finished.at);
    hops.add('client: the result -> in hand', result && t1 - result.at);
    hops.add('= result latency', t1 - t0);
  }
  hops.print(`W2, ${W2_RUNS} runs one after another (medians of hops do not add up exactly to the median of their sum):`);
}

/** W3a: the hops of each step (a task's result recorded, the next task's report). */
async function w3a(port: number): Promise<void> {
  const marks: { t0: number; t1: number }[] = [];
  const packets = await captured(port, async () => {
    for (let i = 0; i < W3A_CHAINS; i++) {
      const t0 = now();
      const run = await api<{ id: string }>(base(port), 'POST', '/v1/runs', { workflow: 'chain', version: '1', input: { steps: 10 } });
      await api(base(port), 'GET', `/v1/runs/${run.id}/result?waitMs=20000`);
      marks.push({ t0, t1: now() });
    }
  });
  const hops = new Hops();
  for (const { t0, t1 } of marks) {
    const chain = packets.filter((p) => p.at >= t0 && p.at <= t1);
    const reports = chain.filter((p) => p.to === port && p.text.includes('POST /v1/worker/reports'));
    hops.add('= chain', t1 - t0);
    for (const [k, report] of reports.entries()) {
      const statement = chain.find((p) => p.at > report.at && p.to === PG_PORT);
      const answer = statement && chain.find((p) => p.at > statement.at && p.from === PG_PORT && p.to === statement.from);
      const answered = answer && chain.find((p) => p.at > answer.at && p.from === port && p.to === report.from);
      const next = reports[k + 1];
      hops.add('coordinator: report -> its statement', statement && statement.at - report.at);
      hops.add('PostgreSQL: statement -> answer', answer && statement && answer.at - statement.at);
      hops.add("coordinator: answer -> the worker's answer", answered && answer && answered.at - answer.at);
      hops.add('worker: answer -> next report', next && answered && next.at - answered.at);
      hops.add('= a step (report -> next report)', next && next.at - report.at);
    }
  }
  hops.print(`W3a, ${W3A_CHAINS} ten-step chains one after another, per step:`);
}

/** One run of `workflow` started and waited for, as the bench's W2 and W3a do. */
async function runOnce(url: string, workflow: string, input?: unknown): Promise<void> {
  const run = await api<{ id: string }>(url, 'POST', '/v1/runs', { workflow, version: '1', input });
  await api(url, 'GET', `/v1/runs/${run.id}/result?waitMs=10000`);
}

/** The one-at-a-time paths warmed up as the bench warms them up before W2. */
async function warmUp(url: string): Promise<void> {
  for (let i = 0; i < WARMUP_PROBES; i++) await runOnce(url, 'probe');
  for (let i = 0; i < WARMUP_CHAINS; i++) await runOnce(url, 'chain', { steps: 10 });
}

/** The engine's coordinator and worker, warmed up (JIT, connections, prepared plans). */
async function startEngine(): Promise<{ url: string; stop(): Promise<void> }> {
  const db = await BenchDatabase.create(`timeline_${MODE}`);
  const procs: Proc[] = [];
  const stop = async () => {
    for (const proc of procs.reverse()) await proc.stop();
    await db.drop();
  };
  try {
    const redis = { REDIS_URL, REDIS_PREFIX: `timeline:${randomBytes(4).toString('hex')}:` };
    const coordinator = await startCoordinator(db, MODE === 'http' ? 'none' : MODE, redis);
    procs.push(coordinator.proc);
    procs.push(await startWorker([coordinator.url], MODE, redis));
    await startInBatches(coordinator.url, WARMUP, () => ({ workflow: 'echo', version: '1', input: 1 }));
    await until('warm-up', async () => (await db.completed('echo')) === WARMUP);
    await warmUp(coordinator.url);
    return { url: coordinator.url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** With --floor, bench/floor.ts's stand-ins instead (the same hops with nothing else on them), warmed up as the floor's bench does. */
async function startStandIns(): Promise<{ url: string; stop(): Promise<void> }> {
  const floor = await startFloor();
  try {
    await warmUp(floor.url);
    return floor;
  } catch (error) {
    await floor.stop();
    throw error;
  }
}

async function main(): Promise<void> {
  execFileSync('tcpdump', ['--version'], { stdio: 'ignore' });
  if (!MODES.includes(MODE)) throw new Error(`--mode must be one of ${MODES.join(', ')}`);
  const { url, stop } = process.argv.includes('--floor') ? await startStandIns() : await startEngine();
  try {
    const port = Number(new URL(url).port);
    await w2(port);
    await w3a(port);
  } finally {
    await stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
