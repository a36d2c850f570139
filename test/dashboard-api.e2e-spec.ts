import { type FeedEvent, type RunChange, WorkflowClient } from '@nest-durable/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { RUN_TABLES } from '@app/persistence';

const ECHO = { name: 'echo', version: '1' };
const ORDER = { name: 'order-processing', version: '1.0.0' };
const NO_SUCH_RUN = '01a22c37-316c-762f-a717-4521456009df';

/** Collects a feed's events in the background, until `stop`. */
function follow(client: WorkflowClient, filter: { runId?: string; workflow?: string }) {
  const controller = new AbortController();
  const events: FeedEvent[] = [];
  const reading = (async () => {
    for await (const event of client.feed(filter, controller.signal)) events.push(event);
  })().catch((error: unknown) => {
    if (!controller.signal.aborted) throw error;
  });
  const changes = () => events.filter((event): event is { type: 'run'; data: RunChange } => event.type === 'run').map((event) => event.data);
  return { events, changes, reading, stop: () => controller.abort(), controller };
}

/** The operators' API (stats, transitions, the live feed) against real PostgreSQL, two coordinators and a real worker. */
describe('dashboard API', () => {
  let db: TestDatabase;
  let first: RunningCoordinator;
  let second: RunningCoordinator;
  let worker: RunningWorker | undefined;
  let client: WorkflowClient;
  let otherClient: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('dashboard_api');
    first = await startCoordinator(db.url, { feedKeepAliveMs: 200 });
    second = await startCoordinator(db.url);
    client = new WorkflowClient({ url: first.url });
    otherClient = new WorkflowClient({ url: second.url });
  });

  afterEach(async () => {
    await worker?.close();
    worker = undefined;
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, outbox, dead_letters, workers CASCADE`);
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
    await db?.drop();
  });

  /** The value of an unlabelled series in a coordinator's /metrics. */
  const metric = async (coordinator: RunningCoordinator, name: string) => {
    const text = await (await fetch(`${coordinator.url}/metrics`)).text();
    return Number(new RegExp(`^wf_${name} (\\S+)$`, 'm').exec(text)?.[1]);
  };

  describe('GET /v1/stats', () => {
    it('counts runs by status and gives each queue its depth, before and after a worker took them', async () => {
      const echoes = await client.startMany([{ workflow: ECHO }, { workflow: ECHO }, { workflow: ECHO }]);
      await client.start(ECHO, null, { runAt: new Date(Date.now() + 3_600_000) });
      // No worker serves this shard: it stays ready.
      await client.start(ECHO, null, { shard: 'eu' });
      await client.start({ name: 'sleepy', version: '1' }, { ms: 3_600_000 });

      const before = await client.stats();
      expect(before.window).toBe('1h');
      expect(before.runs).toEqual([
        { workflow: 'echo', version: '1', status: 'queued', count: 5 },
        { workflow: 'sleepy', version: '1', status: 'queued', count: 1 },
      ]);
      expect(before.queues).toEqual([
        expect.objectContaining({ queue: 'echo:1', workflow: 'echo', version: '1', shard: null, ready: 3, delayed: 1, running: 0, waiting: 0 }),
        expect.objectContaining({ queue: 'echo:1:eu', workflow: 'echo', version: '1', shard: 'eu', ready: 1, delayed: 0, running: 0, waiting: 0 }),
        expect.objectContaining({ queue: 'sleepy:1', workflow: 'sleepy', shard: null, ready: 1, delayed: 0, running: 0, waiting: 0 }),
      ]);
      expect(before.queues.map((queue) => queue.hosted)).toEqual([false, false, false]);
      expect(before.workersOnline).toBe(0);
      expect(before.queues[0].oldestReadyAgeMs).toBeGreaterThan(0);
      expect(before.outbox).toEqual({ backlog: 0, oldestAgeMs: null });
      expect(before.deadLetters).toBe(0);
      // Whole minutes of the last hour, the current one last.
      expect(before.throughput.length).toBeGreaterThanOrEqual(61);
      expect(before.throughput.length).toBeLessThanOrEqual(62);
      expect(before.throughput.reduce((sum, minute) => sum + minute.started, 0)).toBe(6);
      expect(before.throughput.reduce((sum, minute) => sum + minute.finished, 0)).toBe(0);

      worker = await startWorker(first.url);
      await Promise.all(echoes.map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
      // Both views of it: the stats' statements run side by side, each in a snapshot of its own. The worker's first
      // registration is not on a run's path: on a busy machine the runs can be done before it lands.
      const after = await eventually('the sleepy run to suspend and the worker to be registered', async () => {
        const stats = await otherClient.stats('24h');
        const settled =
          stats.workersOnline === 1 &&
          stats.queues.find((queue) => queue.queue === 'sleepy:1')?.waiting === 1 &&
          stats.runs.some((row) => row.workflow === 'sleepy' && row.status === 'waiting');
        return settled && stats;
      });
      expect(after.window).toBe('24h');
      expect(after.throughput.length).toBeGreaterThanOrEqual(1441);
      expect(after.runs).toEqual([
        { workflow: 'echo', version: '1', status: 'completed', count: 3 },
        { workflow: 'echo', version: '1', status: 'queued', count: 2 },
        { workflow: 'sleepy', version: '1', status: 'waiting', count: 1 },
      ]);
      const queue = (name: string) => after.queues.find((entry) => entry.queue === name);
      expect(queue('echo:1')).toMatchObject({ ready: 0, delayed: 1, running: 0, waiting: 0, oldestReadyAgeMs: null, hosted: true });
      // Nobody serves the shard: the dashboard can say why its run does not move.
      expect(queue('echo:1:eu')).toMatchObject({ ready: 1, delayed: 0, running: 0, waiting: 0, hosted: false });
      expect(queue('sleepy:1')).toMatchObject({ ready: 0, delayed: 0, running: 0, waiting: 1, oldestReadyAgeMs: null, hosted: true });
      // The queues the worker serves are listed, empty ones too.
      expect(queue('order-processing:1.0.0')).toEqual({
        queue: 'order-processing:1.0.0',
        workflow: 'order-processing',
        version: '1.0.0',
        shard: null,
        ready: 0,
        delayed: 0,
        running: 0,
        waiting: 0,
        oldestReadyAgeMs: null,
        hosted: true,
      });
      expect(after.queues.map((entry) => entry.queue)).toEqual([...after.queues.map((entry) => entry.queue)].sort());
      expect(after.throughput.reduce((sum, minute) => sum + minute.finished, 0)).toBe(3);
    });

    it('refuses a window it does not know', async () => {
      const response = await fetch(`${first.url}/v1/stats?window=7d`);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ reason: 'invalid_window' });
    });
  });

  describe('GET /v1/runs/{id}/transitions', () => {
    it('lists the transitions of a completed run in order, with the worker that made them', async () => {
      worker = await startWorker(first.url, { workerId: 'history-worker' });
      const run = await client.start(ORDER, { orderId: 'o-1' });
      expect((await client.waitForResult(run.id, { timeoutMs: 10_000 })).status).toBe('completed');
      const { items, truncated } = await otherClient.transitions(run.id);
      expect(truncated).toBe(false);
      expect(items.map(({ from, to, revision, workerId }) => ({ from, to, revision, workerId }))).toEqual([
        { from: null, to: 'queued', revision: 0, workerId: null },
        { from: 'queued', to: 'running', revision: 1, workerId: 'history-worker' },
        { from: 'running', to: 'completed', revision: 2, workerId: 'history-worker' },
      ]);
      const times = items.map((item) => Date.parse(item.at));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    });

    it('pages through the transitions with limit and the cursor of the previous page', async () => {
      worker = await startWorker(first.url, { workerId: 'paging-worker' });
      const run = await client.start(ORDER, { orderId: 'o-paged' });
      expect((await client.waitForResult(run.id, { timeoutMs: 10_000 })).status).toBe('completed');
      const firstPage = await client.transitions(run.id, { limit: 2 });
      expect(firstPage).toMatchObject({ items: [{ to: 'queued' }, { to: 'running' }], truncated: true, nextCursor: expect.any(String) });
      const secondPage = await otherClient.transitions(run.id, { limit: 2, after: firstPage.nextCursor! });
      expect(secondPage).toMatchObject({ items: [{ to: 'completed' }], truncated: false, nextCursor: null });
      expect(await client.transitions(run.id)).toMatchObject({ items: [{ to: 'queued' }, { to: 'running' }, { to: 'completed' }], nextCursor: null });
      await expect(client.transitions(run.id, { limit: 0 })).rejects.toMatchObject({ statusCode: 400, reason: 'invalid_limit' });
      await expect(client.transitions(run.id, { after: 'x1' })).rejects.toMatchObject({ statusCode: 400, reason: 'invalid_after' });
      await expect(client.transitions(run.id, { after: '9'.repeat(19) })).rejects.toMatchObject({ statusCode: 400, reason: 'invalid_after' });
    });

    it("keeps the order and every page whole where the ids of a run's transitions gain a digit", async () => {
      // The next ids are 10^k - 1, 10^k and 10^k + 1: as text, '10...0' < '10...1' < '9...9'.
      const [{ next }] = await db.sql<{ next: string }>(`SELECT nextval(pg_get_serial_sequence('run_transitions', 'id'))::text AS next`);
      await db.sql(`SELECT setval(pg_get_serial_sequence('run_transitions', 'id'), $1::bigint)`, [10 ** next.length - 2]);
      worker = await startWorker(first.url, { workerId: 'digits-worker' });
      const run = await client.start(ORDER, { orderId: 'o-digits' });
      expect((await client.waitForResult(run.id, { timeoutMs: 10_000 })).status).toBe('completed');
      const ids = await db.sql<{ id: string }>('SELECT id::text FROM run_transitions WHERE run_id = $1', [run.id]);
      expect(new Set(ids.map(({ id }) => id.length)).size).toBe(2);
      expect((await client.transitions(run.id)).items.map((item) => item.revision)).toEqual([0, 1, 2]);
      const firstPage = await client.transitions(run.id, { limit: 2 });
      const secondPage = await client.transitions(run.id, { limit: 2, after: firstPage.nextCursor! });
      expect([...firstPage.items, ...secondPage.items].map((item) => item.revision)).toEqual([0, 1, 2]);
    });

    it('answers 404 run_not_found for a run that does not exist, 400 for an id that is not one', async () => {
      await expect(client.transitions(NO_SUCH_RUN)).rejects.toMatchObject({ statusCode: 404, reason: 'run_not_found' });
      await expect(client.transitions(NO_SUCH_RUN, { after: '1' })).rejects.toMatchObject({ statusCode: 404, reason: 'run_not_found' });
      await expect(client.transitions('nope')).rejects.toMatchObject({ statusCode: 400, reason: 'invalid_run_id' });
    });
  });

  describe('step timeline', () => {
    it('gives a task its end, a sleep its start, end and wake time', async () => {
      worker = await startWorker(first.url);
      const ordered = await client.start(ORDER, { orderId: 'o-2' });
      const napping = await client.start({ name: 'sleepy', version: '1' }, { ms: 50 });
      const [order, nap] = await Promise.all([ordered, napping].map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
      expect(order.tasks).toHaveLength(3);
      for (const task of order.tasks ?? []) {
        expect(task).toMatchObject({ kind: 'task', finishedAt: task.createdAt, wakeAt: null, childId: null });
        // Dated from the duration the worker measured: at or before its end.
        expect(Date.parse(task.startedAt!)).toBeLessThanOrEqual(Date.parse(task.finishedAt!));
      }
      const [sleep] = nap.tasks ?? [];
      expect(sleep).toMatchObject({ kind: 'sleep', status: 'completed', startedAt: sleep.createdAt, childId: null });
      expect(Date.parse(sleep.wakeAt!) - Date.parse(sleep.startedAt!)).toBeGreaterThanOrEqual(50);
      expect(Date.parse(sleep.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(sleep.wakeAt!));
    });

    it("dates a task's start from the duration its worker reports, and leaves it out when none is reported", async () => {
      const run = await client.start(ECHO, null);
      const claim = await fetch(`${first.url}/v1/worker/claims`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ workerId: 'timeline', workflows: [ECHO], limit: 1 }),
      });
      const [held] = ((await claim.json()) as { runs: { id: string; revision: number }[] }).runs;
      expect(held.id).toBe(run.id);
      const task = (key: string, seq: number, durationMs?: number) => ({
        expectedRevision: held.revision,
        key,
        seq,
        name: key,
        status: 'completed',
        attempts: 1,
        durationMs,
      });
      const reports = [task('timed#1', 0, 1_500), task('untimed#1', 1)].map((body) => ({ type: 'task', runId: run.id, task: body }));
      const reported = await fetch(`${first.url}/v1/worker/reports`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reports }),
      });
      expect(reported.status).toBe(200);
      const [timed, untimed] = (await client.get(run.id)).tasks ?? [];
      expect(Date.parse(timed.finishedAt!) - Date.parse(timed.startedAt!)).toBe(1_500);
      expect(untimed).toMatchObject({ key: 'untimed#1', startedAt: null, finishedAt: untimed.createdAt });
    });
  });

  describe('GET /v1/feed', () => {
    it("delivers a run's transitions, filtered by run and by workflow, to a feed on another coordinator", async () => {
      const run = await client.start(ORDER, { orderId: 'o-3' });
      const byRun = follow(otherClient, { runId: run.id });
      const byWorkflow = follow(otherClient, { workflow: ORDER.name });
      const everything = follow(client, {});
      await eventually('the feeds to open', async () => (await metric(second, 'feeds_open')) === 2 && (await metric(first, 'feeds_open')) === 1);

      const other = await client.start(ORDER, { orderId: 'o-4' });
      await client.start(ECHO, 'not this workflow');
      worker = await startWorker(first.url);
      await client.waitForResult(run.id, { timeoutMs: 10_000 });
      await client.waitForResult(other.id, { timeoutMs: 10_000 });
      const statuses = (changes: RunChange[], id: string) => changes.filter((change) => change.id === id).map((change) => [change.status, change.revision]);

      await eventually('the run to complete in its feed', async () => byRun.changes().some((change) => change.status === 'completed'));
      expect(byRun.changes().map((change) => [change.id, change.status, change.revision])).toEqual([
        [run.id, 'running', 1],
        [run.id, 'completed', 2],
      ]);
      expect(byRun.changes()[0]).toEqual({ id: run.id, workflow: ORDER.name, version: ORDER.version, status: 'running', revision: 1, at: expect.any(String) });

      await eventually('the other run to complete in the workflow feed', async () => statuses(byWorkflow.changes(), other.id).length === 3);
      expect(statuses(byWorkflow.changes(), other.id)).toEqual([
        ['queued', 0],
        ['running', 1],
        ['completed', 2],
      ]);
      expect(byWorkflow.changes().every((change) => change.workflow === ORDER.name)).toBe(true);
      await eventually('the echo run in the unfiltered feed', async () => everything.changes().some((change) => change.workflow === 'echo'));

      for (const feed of [byRun, byWorkflow, everything]) {
        feed.stop();
        await feed.reading;
      }
      // The coordinators forget a feed once its client went away.
      await eventually('the feeds to close', async () => (await metric(second, 'feeds_open')) === 0 && (await metric(first, 'feeds_open')) === 0);
    });

    it('announces changes only while some coordinator has a feed open', async () => {
      const listener = new Client({ connectionString: db.url });
      await listener.connect();
      const payloads: string[] = [];
      listener.on('notification', (message) => payloads.push(message.payload ?? ''));
      try {
        await listener.query('LISTEN wf_run_changes');
        // As if the watches of the tests before had expired: nobody watches.
        await db.sql('DELETE FROM feed_watchers');
        const unwatched = await client.start(ECHO, 'unwatched');
        const feed = follow(otherClient, {});
        await eventually('the feed to open', async () => feed.events.some((event) => event.type === 'open'));
        expect(await db.sql('SELECT coordinator FROM feed_watchers WHERE expires_at > now()')).toHaveLength(1);
        const watched = await client.start(ECHO, 'watched');
        await eventually('the watched run announced', async () => payloads.some((payload) => payload.includes(watched.id)));
        // Notifications arrive in commit order: the unwatched start, committed first, sent none.
        expect(payloads.filter((payload) => payload.includes(unwatched.id))).toEqual([]);
        await eventually('the feed to get the watched run', async () => feed.changes().some((change) => change.id === watched.id));
        feed.stop();
        await feed.reading;
      } finally {
        await listener.end();
      }
    });

    it('sends keep-alive comments', async () => {
      const controller = new AbortController();
      const response = await fetch(`${first.url}/v1/feed`, { signal: controller.signal });
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes(': keep-alive\n\n')) text += (await reader.read()).value;
      expect(text.startsWith(': connected\n\n')).toBe(true);
      controller.abort();
      await eventually('the feed to close', async () => (await metric(first, 'feeds_open')) === 0);
    });

    it('closes when the loop reading it ends', async () => {
      for await (const event of client.feed({})) {
        expect(event).toEqual({ type: 'open' });
        break;
      }
      await eventually('the feed to close', async () => (await metric(first, 'feeds_open')) === 0);
    });

    it('refuses a filter that is not valid', async () => {
      const events = client.feed({ runId: 'nope' });
      await expect(events.next()).rejects.toMatchObject({ statusCode: 400, reason: 'invalid_runId' });
    });

    it('ends open feeds when its coordinator shuts down', async () => {
      const third = await startCoordinator(db.url);
      const feed = follow(new WorkflowClient({ url: third.url }), {});
      await eventually('the feed to open', async () => (await metric(third, 'feeds_open')) === 1);
      await third.close();
      await feed.reading;
      expect(feed.controller.signal.aborted).toBe(false);
    });

    it('takes the client token as every /v1 route does', async () => {
      const secured = await startCoordinator(db.url, { authDisabled: false, clientToken: 'dashboard-client-token', workerToken: 'dashboard-worker-token' });
      try {
        for (const path of ['/v1/feed', '/v1/stats', `/v1/runs/${NO_SUCH_RUN}/transitions`]) {
          const response = await fetch(`${secured.url}${path}`);
          expect([path, response.status, ((await response.json()) as { reason: string }).reason]).toEqual([path, 401, 'unauthorized']);
        }
        const authorised = new WorkflowClient({ url: secured.url, token: 'dashboard-client-token' });
        expect((await authorised.stats()).window).toBe('1h');
        const feed = follow(authorised, {});
        await eventually('the feed to open', async () => (await metric(secured, 'feeds_open')) === 1);
        feed.stop();
        await feed.reading;
      } finally {
        await secured.close();
      }
    });
  });
});
