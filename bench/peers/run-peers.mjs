// Peer benchmarks: runs the workloads of bench/run.ts (W1 throughput, W2 idle latency, W3 chains) against
// BullMQ, graphile-worker and DBOS (through its queue, and started in-process), each with a fresh PostgreSQL
// database / Redis key prefix and one worker child process at concurrency 50. The drivers are driver-*.mjs.
//
//   node bench/peers/run-peers.mjs [--only bullmq|graphile-worker|dbos|'dbos (in-process)']
//
// Progress lines start with "[peers] "; the last line of stdout is a JSON array of results.
import { CONCURRENCY, CHAIN_STEPS, log, now, percentile, round, storeCpuSeconds, until } from './harness.mjs';

// Each driver module is loaded only when its peer runs, so the orchestrator holds one peer's client library.
const DRIVERS = {
  bullmq: async () => (await import('./driver-bullmq.mjs')).bullmqDriver(),
  'graphile-worker': async () => (await import('./driver-graphile.mjs')).graphileDriver(),
  dbos: async () => (await import('./driver-dbos.mjs')).dbosQueueDriver(),
  'dbos (in-process)': async () => (await import('./driver-dbos.mjs')).dbosInProcessDriver(),
};

// A fresh worker's first requests, unmeasured then measured, as the engine's bench's short warm-up.
const SHORT_WARMUP_PROBES = 500;
const SHORT_WARMUP_CHAINS = 50;
// The warm-up's counts are bench/support.ts's (see there): bulk jobs before W1, then the one-at-a-time paths before W2.
const WARMUP = 2_000;
const WARMUP_PROBES = 1_000;
const WARMUP_CHAINS = 200;
const W1_RUNS = 5_000;
const W2_RUNS = 300;
const W3A_CHAINS = 50;
const W3B_CHAINS = 200;

/**
 * `n` W2 probes one after another, keyed `<prefix><i>`: per probe, start latency (handler start − just before the
 * enqueue call), result latency (completion observed − the same) and the enqueue call's own round trip, in ms.
 */
async function probes(d, prefix, n) {
  const start = [];
  const result = [];
  const roundTrip = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const { enqueuedAt, startedAt } = await d.probe(`${prefix}${i}`);
    result.push(now() - t0);
    start.push(startedAt - t0);
    roundTrip.push(enqueuedAt - t0);
  }
  return { start, result, roundTrip };
}

/** `n` W3a chains one after another, keyed `<prefix><i>`: each one's latency from before enqueue to completion, in ms. */
async function chains(d, prefix, n) {
  const latency = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await d.chain(`${prefix}${i}`);
    latency.push(now() - t0);
  }
  return latency;
}

async function benchPeer(mode) {
  log(`${mode}: starting worker`);
  const d = await DRIVERS[mode]();
  try {
    const drained = (tag, n) => until(`${tag} drained`, async () => (await d.worker.stats(tag)).count >= n);
    const lastEnd = async (tag) => (d.lastEnd ? await d.lastEnd(tag) : (await d.worker.stats(tag)).lastEnd);

    log(`${mode}: short warm-up (${SHORT_WARMUP_PROBES} jobs, ${SHORT_WARMUP_CHAINS} chains), then W2 and W3a measured`);
    await probes(d, 'short-warm-', SHORT_WARMUP_PROBES);
    await chains(d, 'short-warm-', SHORT_WARMUP_CHAINS);
    const short = await probes(d, 'short-', W2_RUNS);
    const shortChainLatency = await chains(d, 'short-', W3A_CHAINS);

    log(`${mode}: warm-up (${WARMUP} jobs)`);
    await d.enqueueSingles('warm', WARMUP);
    await drained('warm', WARMUP);

    log(`${mode}: W1 throughput (${W1_RUNS} single-step jobs, concurrency ${CONCURRENCY})`);
    const commitsBeforeW1 = await d.commits();
    const storeCpuBeforeW1 = storeCpuSeconds(d.store);
    const w1Start = now();
    await d.enqueueSingles('w1', W1_RUNS);
    await drained('w1', W1_RUNS);
    const w1StoreCpu = storeCpuSeconds(d.store) - storeCpuBeforeW1;
    const w1CpuWindow = (now() - w1Start) / 1000;
    const commitsAfterW1 = await d.commits();
    const w1Stats = await d.worker.stats('w1');
    const w1End = await lastEnd('w1');
    const w1Drain = (w1End - w1Stats.firstStart) / 1000;
    const w1Elapsed = (w1End - w1Start) / 1000;

    log(`${mode}: warm-up of W2 and W3a (${WARMUP_PROBES} jobs, ${WARMUP_CHAINS} chains)`);
    await probes(d, 'warm-', WARMUP_PROBES);
    await chains(d, 'warm-', WARMUP_CHAINS);

    log(`${mode}: W2 idle latency (${W2_RUNS} jobs one after another)`);
    const w2 = await probes(d, '', W2_RUNS);

    log(`${mode}: W3 chains (${W3A_CHAINS} sequential, ${W3B_CHAINS} concurrent, ${CHAIN_STEPS} steps)`);
    const chainLatency = await chains(d, '', W3A_CHAINS);
    const commitsBeforeW3b = await d.commits();
    await d.enqueueChains('w3b', W3B_CHAINS);
    await drained('w3b', W3B_CHAINS);
    const commitsAfterW3b = await d.commits();
    const w3bStats = await d.worker.stats('w3b');
    const w3bSpan = ((await lastEnd('w3b')) - w3bStats.firstStart) / 1000;
    const w3bSteps = W3B_CHAINS * CHAIN_STEPS;

    const commitsPerRun = commitsBeforeW1 === null ? null : (commitsAfterW1 - commitsBeforeW1) / W1_RUNS;
    const commitsPerStep = commitsBeforeW3b === null ? null : (commitsAfterW3b - commitsBeforeW3b) / w3bSteps;
    return {
      mode,
      w1DrainPerSecond: round(W1_RUNS / w1Drain, 0),
      w1CreateDrainPerSecond: round(W1_RUNS / w1Elapsed, 0),
      // Over the window the CPU was read in: from the first enqueue to the reading after drained, as bench/run.ts.
      w1DbCpuCores: round(w1StoreCpu / w1CpuWindow, 2),
      w1RunsPerDbCpuSecond: round(W1_RUNS / w1StoreCpu, 0),
      shortW2StartP50: round(percentile(short.start, 50), 2),
      shortW2ResultP50: round(percentile(short.result, 50), 2),
      shortW3aP50: round(percentile(shortChainLatency, 50), 1),
      w2StartP50: round(percentile(w2.start, 50), 2),
      w2StartP95: round(percentile(w2.start, 95), 2),
      w2StartP99: round(percentile(w2.start, 99), 2),
      w2ResultP50: round(percentile(w2.result, 50), 2),
      w2ResultP99: round(percentile(w2.result, 99), 2),
      startRoundTripP50: round(percentile(w2.roundTrip, 50), 2),
      startRoundTripP99: round(percentile(w2.roundTrip, 99), 2),
      w3aP50: round(percentile(chainLatency, 50), 1),
      w3aP95: round(percentile(chainLatency, 95), 1),
      w3bStepsPerSecond: round(w3bSteps / w3bSpan, 0),
      commitsPerRun: round(commitsPerRun, 2),
      commitsPerStep: round(commitsPerStep, 2),
      requestsPerRun: null,
      coordinatorPeakRssMb: null,
      workerPeakRssMb: d.worker.peakRssMb(),
    };
  } catch (error) {
    log(`${mode}: worker output:\n${d.worker.output}`);
    throw error;
  } finally {
    await d.teardown();
  }
}

async function main() {
  const peers = Object.keys(DRIVERS);
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  if (only && !peers.includes(only)) throw new Error(`--only must be one of ${peers.join(', ')}`);
  const results = [];
  for (const mode of only ? [only] : peers) {
    const result = await benchPeer(mode);
    log(`${mode}: ${JSON.stringify(result)}`);
    results.push(result);
  }
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
