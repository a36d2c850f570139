// DBOS executor process: registers the workflows, launches DBOS against the system database, and
// registers the `bench` queue (worker concurrency 50) that the orchestrator's DBOSClient enqueues to.
// Workflows: single (one step; W1/warm-up), probe (one step that returns its start time; W2),
// chain (a workflow with `steps` sequential steps; W3).
import { DBOS } from '@dbos-inc/dbos-sdk';
import { finished, now, onStop, ready, started } from './worker-common.mjs';

const concurrency = Number(process.env.CONCURRENCY ?? 50);
const pollMs = Number(process.env.DBOS_QUEUE_POLL_MS ?? 10);

DBOS.setConfig({ name: 'peerbench', systemDatabaseUrl: process.env.DATABASE_URL, logLevel: 'warn' });

DBOS.registerWorkflow(
  async function single(tag) {
    const startedAt = await DBOS.runStep(
      async () => {
        const at = now();
        started(tag, at);
        return at;
      },
      { name: 'step' },
    );
    finished(tag);
    return { startedAt };
  },
  { name: 'single' },
);
DBOS.registerWorkflow(
  async function probe() {
    const startedAt = await DBOS.runStep(async () => now(), { name: 'step' });
    return { startedAt };
  },
  { name: 'probe' },
);
DBOS.registerWorkflow(
  async function chain(tag, steps) {
    for (let step = 0; step < steps; step++) {
      await DBOS.runStep(
        async () => {
          if (step === 0) started(tag);
          return step;
        },
        { name: `step${step}` },
      );
    }
    finished(tag);
    return { steps };
  },
  { name: 'chain' },
);

await DBOS.launch();
await DBOS.registerQueue('bench', { workerConcurrency: concurrency, minPollingIntervalMs: pollMs });
onStop(() => DBOS.shutdown());
ready();
