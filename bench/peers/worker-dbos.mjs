// DBOS executor process: registers the workflows and launches DBOS against the system database. Two modes
// (DBOS_MODE), the same workflows:
// - queue (default): registers the `bench` queue (worker concurrency 50) that the orchestrator's DBOSClient
//   enqueues to;
// - in-process: starts workflows itself with DBOS.startWorkflow, as a DBOS app does, on requests to a small
//   HTTP API (serveStarts below) on a free port, which the ready message names.
// Workflows: single (one step; W1/warm-up), probe (one step that returns its start time; W2),
// chain (a workflow with `steps` sequential steps; W3).
import { createServer } from 'node:http';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { finished, now, onStop, ready, started } from './worker-common.mjs';

const concurrency = Number(process.env.CONCURRENCY ?? 50);
const pollMs = Number(process.env.DBOS_QUEUE_POLL_MS ?? 10);
const mode = process.env.DBOS_MODE ?? 'queue';

DBOS.setConfig({ name: 'peerbench', systemDatabaseUrl: process.env.DATABASE_URL, logLevel: 'warn' });

const workflows = {
  single: DBOS.registerWorkflow(
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
  ),
  probe: DBOS.registerWorkflow(
    async function probe() {
      const startedAt = await DBOS.runStep(async () => now(), { name: 'step' });
      return { startedAt };
    },
    { name: 'probe' },
  ),
  chain: DBOS.registerWorkflow(
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
  ),
};

/**
 * POST /start { workflow, id, args } starts one workflow under the caller's id and answers { id } once the start is
 * durable (startWorkflow resolves after the workflow's status row is committed); GET /result/<id> awaits that
 * start's handle and answers its result. POST /start-batch { workflow, runs: [{ id, args }] } starts many, at most
 * `concurrency` starts in flight, and answers once all are durable; their handles are not kept (no one asks).
 */
async function serveStarts() {
  const handles = new Map();
  const start = (workflow, id, args) => DBOS.startWorkflow(workflows[workflow], { workflowID: id })(...args);
  const routes = {
    'POST /start': async ({ workflow, id, args }) => {
      handles.set(id, await start(workflow, id, args));
      return { id };
    },
    'POST /start-batch': async ({ workflow, runs }) => {
      let next = 0;
      const starter = async () => {
        while (next < runs.length) {
          const { id, args } = runs[next++];
          await start(workflow, id, args);
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, runs.length) }, starter));
      return { started: runs.length };
    },
    'GET /result': async (_body, id) => {
      const handle = handles.get(id);
      if (!handle) throw new Error(`no started workflow ${id}`);
      handles.delete(id);
      return await handle.getResult();
    },
  };
  const server = createServer(async (request, response) => {
    const [, path, id] = /^(\/[^/]+)(?:\/(.+))?$/.exec(request.url) ?? [];
    const route = routes[`${request.method} ${path}`];
    let status = 200;
    let answer;
    try {
      let body = '';
      for await (const chunk of request) body += chunk;
      if (!route) throw new Error(`no route ${request.method} ${request.url}`);
      answer = await route(body ? JSON.parse(body) : undefined, id && decodeURIComponent(id));
    } catch (error) {
      status = 500;
      answer = { error: String(error) };
    }
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

await DBOS.launch();
if (mode === 'in-process') {
  const server = await serveStarts();
  onStop(async () => {
    server.close();
    await DBOS.shutdown();
  });
  ready({ port: server.address().port });
} else {
  await DBOS.registerQueue('bench', { workerConcurrency: concurrency, minPollingIntervalMs: pollMs });
  onStop(() => DBOS.shutdown());
  ready();
}
