// graphile-worker runner: concurrency 50, pool of 50 connections (graphile-worker warns when the pool
// is smaller than the concurrency). Tasks: single (W1/warm-up), probe (W2), chain (W3: each step
// adds the next step's job with helpers.addJob before returning).
import { run } from 'graphile-worker';
import { finished, now, onStop, ready, report, started } from './worker-common.mjs';

const concurrency = Number(process.env.CONCURRENCY ?? 50);
const runner = await run({
  connectionString: process.env.DATABASE_URL,
  concurrency,
  maxPoolSize: concurrency,
  noHandleSignals: true,
  logger: undefined,
  taskList: {
    single: async (payload) => {
      started(payload.tag);
    },
    probe: async (payload) => {
      // graphile-worker has no job results: the start time goes to the orchestrator over IPC.
      report({ type: 'probe', key: payload.key, startedAt: now() });
    },
    chain: async (payload, helpers) => {
      if (payload.step === 0) started(payload.tag);
      if (payload.step + 1 < payload.steps) await helpers.addJob('chain', { ...payload, step: payload.step + 1 });
    },
  },
});
// 'job:complete' is emitted right after the worker issues the completion (DELETE) query.
runner.events.on('job:complete', ({ job, error }) => {
  if (error) return;
  if (job.task_identifier === 'single') finished(job.payload.tag);
  else if (job.task_identifier === 'chain' && job.payload.step + 1 === job.payload.steps) finished(job.payload.tag);
});
onStop(() => runner.stop());
ready();
