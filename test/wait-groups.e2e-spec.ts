import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { PENDING_EVENTS_PER_RUN_MAX } from '@nest-durable/common';
import { replayHistories } from '@nest-durable/worker';
import { branch, defineWorkflow, WorkflowError } from '@nest-durable/workflow';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

/** Sleeps first (until woken), so that an event sent meanwhile is sent before the run waits for it. */
const kept = defineWorkflow<{ orderId: string }, unknown>({
  name: 'wg-kept',
  version: '1',
  handler: async (ctx, { orderId }) => {
    await ctx.sleep('settle', 60_000);
    const matched = await ctx.waitForEvent('paid', { match: { orderId, 'customer.tier': 'gold' } });
    // A later wait without a match takes the oldest event the first one passed over.
    const next = await ctx.waitForEvent('paid');
    return { matched, next };
  },
});

const malformed = defineWorkflow<string, unknown>({
  name: 'wg-malformed',
  version: '1',
  handler: async (ctx, how) => (how === 'path' ? ctx.waitForEvent('paid', { match: { 'a..b': 1 } }) : ctx.any('bad', [branch.sleep(-1)])),
});

const child = defineWorkflow<number, number>({
  name: 'wg-child',
  version: '1',
  handler: async (ctx, ms) => {
    if (ms > 0) await ctx.sleep('work', ms);
    return ms * 2;
  },
});

/** Races an approval (matched by order) against a deadline, then takes whatever event comes next. */
const race = defineWorkflow<{ orderId: string; deadlineMs: number }, unknown>({
  name: 'wg-race',
  version: '1',
  handler: async (ctx, { orderId, deadlineMs }) => {
    const first = await ctx.any('approval', [branch.event<{ by: string }>('approved', { match: { orderId } }), branch.sleep(deadlineMs)]);
    const after = await ctx.waitForEvent('approved', { timeoutMs: 5_000 });
    return { first, after };
  },
});

const everything = defineWorkflow<null, unknown>({
  name: 'wg-all',
  version: '1',
  handler: async (ctx) =>
    ctx.all('everything', [branch.event('a'), branch.event('b'), branch.task(() => 'computed'), branch.child(child, 21), branch.sleep(50)]),
});

/** A child that would run for an hour loses to an event; the parent goes on without it. */
const childRace = defineWorkflow<null, unknown>({
  name: 'wg-child-race',
  version: '1',
  handler: async (ctx) => ctx.any('first', [branch.child(child, 3_600_000), branch.event('stop')]),
});

const attempts = new Map<string, number>();
/** The group resolves, then the attempt fails: the next attempt must resolve it the same way although the sleep has passed by then. */
const replayed = defineWorkflow<null, unknown>({
  name: 'wg-replayed',
  version: '1',
  retry: { maxAttempts: 2, backoff: 'fixed', delayMs: 600 },
  handler: async (ctx) => {
    const first = await ctx.any('race', [branch.event('go'), branch.sleep(400)]);
    const tries = (attempts.get(ctx.runId) ?? 0) + 1;
    attempts.set(ctx.runId, tries);
    if (tries === 1) throw new WorkflowError('the worker fell over after the race');
    return { first, attempt: ctx.attempt };
  },
});

/**
 * Races a payment's completion token against a deadline; when the deadline wins, the token stays completable and
 * the run waits on it by itself. With `retried`, the attempt fails after the race: the next resolves it the same way.
 */
const payment = defineWorkflow<{ deadlineMs: number; tokenTimeoutMs?: number; retried?: boolean }, unknown>({
  name: 'wg-payment',
  version: '1',
  retry: { maxAttempts: 2, backoff: 'fixed', delayMs: 600 },
  handler: async (ctx, { deadlineMs, tokenTimeoutMs, retried }) => {
    const { result } = await ctx.awaitExternal<{ amount: number }>({ name: 'pay', timeoutMs: tokenTimeoutMs });
    const first = await ctx.any('paid-or-late', [result, branch.sleep(deadlineMs)]);
    const tries = (attempts.get(ctx.runId) ?? 0) + 1;
    attempts.set(ctx.runId, tries);
    if (retried && tries === 1) throw new WorkflowError('the worker fell over after the race');
    if (first.index === 0) return { first, attempt: ctx.attempt, amount: first.value.amount };
    return { first, later: await result };
  },
});

/** Waits at a group while updates are applied there: the notes they add are rebuilt on every later execution. */
const noted = defineWorkflow<null, unknown>({
  name: 'wg-noted',
  version: '1',
  updates: { note: {} },
  handler: async (ctx) => {
    const notes: string[] = [];
    ctx.handleUpdate<string, number>('note', (note) => notes.push(note));
    const first = await ctx.any('go-or-late', [branch.event('go'), branch.sleep(60_000)]);
    // The execution after this sleep goes past the recorded group: its updates are applied again there.
    await ctx.sleep('after', 50);
    return { first, notes };
  },
});

const WORKFLOWS = [kept, malformed, child, race, everything, childRace, replayed, payment, noted];

/** The completion token a run made at `token:pay#1`, once recorded. */
const tokenOf = (client: WorkflowClient, id: string) =>
  eventually(`run ${id}'s token`, async () => {
    const step = (await client.get(id)).tasks?.find((s) => s.key === 'token:pay#1');
    return (step?.output as { token: string } | undefined)?.token;
  });

const status = (client: WorkflowClient, id: string, wanted: RunView['status']) =>
  eventually(`run ${id} ${wanted}`, async () => ((await client.get(id)).status === wanted ? true : undefined));
const result = (client: WorkflowClient, id: string) => client.waitForResult(id, { timeoutMs: 10_000 });

describe('matched events and wait groups (HTTP claims)', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('wait_groups');
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 100 });
    worker = await startCustomWorker(coordinator.url, { workflows: WORKFLOWS, claimWaitMs: 1_000 });
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  it('keeps events sent before the wait, delivers the oldest matching one when it waits, and keeps the others for later waits', async () => {
    const run = await client.start(kept, { orderId: 'o-1' });
    await status(client, run.id, 'waiting');
    // Sent while the run sleeps: none is delivered, all are kept.
    expect(await client.sendEvent(run.id, 'paid', { orderId: 'o-2', customer: { tier: 'gold' } })).toEqual({ delivered: false });
    expect(await client.sendEvent(run.id, 'paid', { orderId: 'o-1', customer: { tier: 'silver' } })).toEqual({ delivered: false });
    expect(await client.sendEvent(run.id, 'paid', { orderId: 'o-1', customer: { tier: 'gold' }, n: 1 })).toEqual({ delivered: false });
    await client.wake(run.id);

    expect((await result(client, run.id)).output).toEqual({
      matched: { timedOut: false, data: { orderId: 'o-1', customer: { tier: 'gold' }, n: 1 } },
      next: { timedOut: false, data: { orderId: 'o-2', customer: { tier: 'gold' } } },
    });
  });

  it('wakes a waiting run only for an event that matches', async () => {
    const run = await client.start(kept, { orderId: 'o-7' });
    await status(client, run.id, 'waiting');
    await client.wake(run.id);
    await eventually('waiting at the matched wait', async () =>
      (await client.get(run.id)).tasks?.some((s) => s.key === 'event:paid#1' && s.status === 'waiting'),
    );
    expect(await client.sendEvent(run.id, 'paid', { orderId: 'o-8', customer: { tier: 'gold' } })).toEqual({ delivered: false });
    expect((await client.get(run.id)).status).toBe('waiting');
    expect(await client.sendEvent(run.id, 'paid', { orderId: 'o-7', customer: { tier: 'gold' } })).toEqual({ delivered: true });
    expect((await result(client, run.id)).output).toMatchObject({ matched: { data: { orderId: 'o-7' } }, next: { data: { orderId: 'o-8' } } });
  });

  it(`keeps at most ${PENDING_EVENTS_PER_RUN_MAX} events no wait consumed, and refuses the next clearly without keeping it`, async () => {
    const run = await client.start(kept, { orderId: 'o-full' });
    await db.sql(`INSERT INTO run_events (run_id, name, data) SELECT $1, 'noise', '{}' FROM generate_series(1, $2)`, [run.id, PENDING_EVENTS_PER_RUN_MAX - 1]);
    expect(await client.sendEvent(run.id, 'noise', {})).toEqual({ delivered: false });
    const refused = await client.sendEvent(run.id, 'noise', {}).catch((error: unknown) => error);
    expect(refused).toMatchObject({ statusCode: 409, reason: 'too_many_pending_events' });
    expect(await db.sql(`SELECT count(*)::int AS n FROM run_events WHERE run_id = $1`, [run.id])).toEqual([{ n: PENDING_EVENTS_PER_RUN_MAX }]);
    await client.cancel(run.id);
  });

  it('refuses a malformed match or branch on the worker (the run fails saying why) and on the coordinator (400 invalid_match)', async () => {
    const [path, delay] = await Promise.all([client.start(malformed, 'path'), client.start(malformed, 'delay')]);
    expect((await result(client, path.id)).error).toMatchObject({ name: 'InvalidStepError', message: expect.stringContaining('match field "a..b"') });
    expect((await result(client, delay.id)).error).toMatchObject({ name: 'InvalidStepError', message: expect.stringContaining('branch 0: sleep duration') });

    const body = { expectedRevision: 1, key: 'event:paid#1', seq: 0, kind: 'event', name: 'paid', match: { 'order..id': 'o-1' } };
    const answer = await fetch(`${coordinator.url}/v1/worker/runs/${path.id}/suspend`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ reason: 'invalid_match' });
  });

  it('ctx.any resolves with the first branch to finish; the losing sleep does not fire and a later event is kept for the next wait', async () => {
    const [approved, lapsed] = await Promise.all([
      client.start(race, { orderId: 'o-1', deadlineMs: 60_000 }),
      client.start(race, { orderId: 'o-2', deadlineMs: 200 }),
    ]);
    await status(client, approved.id, 'waiting');
    expect(await client.sendEvent(approved.id, 'approved', { orderId: 'o-9', by: 'mallory' })).toEqual({ delivered: false });
    expect(await client.sendEvent(approved.id, 'approved', { orderId: 'o-1', by: 'alice' })).toEqual({ delivered: true });
    expect((await result(client, approved.id)).output).toEqual({
      first: { index: 0, value: { orderId: 'o-1', by: 'alice' } },
      // The event the group passed over is the next wait's.
      after: { timedOut: false, data: { orderId: 'o-9', by: 'mallory' } },
    });

    // The deadline won, and the run waits at the next wait (while it is still awake, an event is kept, not delivered).
    await eventually('the deadline won and the next wait', async () => {
      const run = await client.get(lapsed.id);
      return run.status === 'waiting' && run.tasks?.some((s) => s.key === 'group:approval#1');
    });
    expect(await client.sendEvent(lapsed.id, 'approved', { orderId: 'o-2', by: 'bob' })).toEqual({ delivered: true });
    expect((await result(client, lapsed.id)).output).toEqual({
      first: { index: 1, value: null },
      after: { timedOut: false, data: { orderId: 'o-2', by: 'bob' } },
    });
  });

  it('ctx.all resolves with every value in order once the last branch finished, across several wake-ups', async () => {
    const run = await client.start(everything, null);
    await status(client, run.id, 'waiting');
    // Delivered to its waiting branch, or kept while the run is awake (its 50 ms sleep ended) and taken when it waits again.
    await client.sendEvent(run.id, 'b', 'bee');
    await eventually('b taken', async () => (await client.get(run.id)).tasks?.some((s) => s.key === 'group:everything#1/1' && s.status === 'completed'));
    expect((await client.get(run.id)).status).not.toBe('completed');
    await client.sendEvent(run.id, 'a', 'ay');
    expect((await result(client, run.id)).output).toEqual(['ay', 'bee', 'computed', 42, null]);
  });

  it('a losing child run goes on by itself; the parent does not wait for it', async () => {
    const run = await client.start(childRace, null);
    await status(client, run.id, 'waiting');
    expect(await client.sendEvent(run.id, 'stop', 'now')).toEqual({ delivered: true });
    expect((await result(client, run.id)).output).toEqual({ index: 1, value: 'now' });
    const [loser] = (await client.list({ workflow: 'wg-child' })).runs.filter((r) => r.parentId === run.id);
    expect(loser.status).toBe('waiting');
    await client.cancel(loser.id);
  });

  it('resolves a group the same way when the run is executed again later (and when its history is replayed)', async () => {
    const run = await client.start(replayed, null);
    await status(client, run.id, 'waiting');
    expect(await client.sendEvent(run.id, 'go', 'first')).toEqual({ delivered: true });
    // Attempt 2 runs after the 400 ms sleep has passed: the recorded choice holds.
    expect((await result(client, run.id)).output).toEqual({ first: { index: 0, value: 'first' }, attempt: 2 });
    expect(attempts.get(run.id)).toBe(2);
    const replays = await replayHistories(replayed, { coordinator: client });
    expect(replays.map((replay) => replay.stoppedAt)).toEqual(['handler-end']);
  });

  it('takes a completion token as a branch: its completion wins, the same way when the run is executed again and replayed', async () => {
    const run = await client.start(payment, { deadlineMs: 400, retried: true });
    const token = await tokenOf(client, run.id);
    await status(client, run.id, 'waiting');
    expect(await client.complete(token, { amount: 5 })).toEqual({ delivered: true });
    // Attempt 2 runs after the 400 ms sleep has passed: the recorded choice holds.
    expect((await result(client, run.id)).output).toEqual({ first: { index: 0, value: { amount: 5 } }, attempt: 2, amount: 5 });
    expect(await client.complete(token, { amount: 6 }).catch((error: unknown) => error)).toMatchObject({ statusCode: 409, reason: 'completion_token_used' });
    const replays = await replayHistories(payment, { coordinator: client });
    expect(replays.map((replay) => replay.stoppedAt)).toEqual(['handler-end']);
  });

  it('a token that loses to a sleep stays completable: its later completion is kept for the wait on it', async () => {
    const run = await client.start(payment, { deadlineMs: 200 });
    const token = await tokenOf(client, run.id);
    await eventually('the deadline won', async () => (await client.get(run.id)).tasks?.some((s) => s.key === 'group:paid-or-late#1'));
    expect((await client.get(run.id)).tasks?.find((s) => s.key === 'group:paid-or-late#1/0')?.output).toEqual({ lost: true });
    await client.complete(token, { amount: 7 });
    expect((await result(client, run.id)).output).toEqual({ first: { index: 1, value: null }, later: { amount: 7 } });
  });

  it('a failed or expired token that wins throws as `await result` does', async () => {
    const [failed, expired] = await Promise.all([
      client.start(payment, { deadlineMs: 60_000 }),
      client.start(payment, { deadlineMs: 60_000, tokenTimeoutMs: 200 }),
    ]);
    const token = await tokenOf(client, failed.id);
    await status(client, failed.id, 'waiting');
    expect(await client.fail(token, { name: 'Declined', message: 'card declined' })).toEqual({ delivered: true });
    expect((await result(client, failed.id)).error).toMatchObject({ name: 'CompletionFailedError' });
    expect((await result(client, expired.id)).error).toMatchObject({ name: 'CompletionTimeoutError' });
    const late = await client.complete(await tokenOf(client, expired.id), { amount: 1 }).catch((error: unknown) => error);
    expect(late).toMatchObject({ statusCode: 410 });
  });

  it('applies an update sent while the run waits at a group there, and again on every later execution', async () => {
    const run = await client.start(noted, null);
    await status(client, run.id, 'waiting');
    expect(await client.update(run.id, 'note', 'first', { timeoutMs: 5_000 })).toBe(1);
    expect(await client.update(run.id, 'note', 'second', { timeoutMs: 5_000 })).toBe(2);
    expect(await client.sendEvent(run.id, 'go', 'now')).toEqual({ delivered: true });
    expect((await result(client, run.id)).output).toEqual({ first: { index: 0, value: 'now' }, notes: ['first', 'second'] });
  });
});

describe('matched events and wait groups (Redis Streams)', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    const prefix = testPrefix('wait-groups');
    db = await createTestDatabase('wait_groups_streams');
    coordinator = await startCoordinator(db.url, { dispatch: 'redis-streams', redisUrl: TEST_REDIS_URL, redisPrefix: prefix, streamPartitions: 2 });
    const config = loadWorkerConfig({
      COORDINATOR_URL: coordinator.url,
      SUBSCRIBER: 'redis-streams',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      REDIS_BLOCK_MS: '500',
    });
    worker = await startCustomWorker(coordinator.url, workerModuleOptions(config, WORKFLOWS));
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  it('wakes runs for matched events, sleeps and children, and resolves any and all', async () => {
    const [approved, lapsed, all] = await Promise.all([
      client.start(race, { orderId: 'o-1', deadlineMs: 60_000 }),
      client.start(race, { orderId: 'o-2', deadlineMs: 200 }),
      client.start(everything, null),
    ]);
    await status(client, approved.id, 'waiting');
    expect(await client.sendEvent(approved.id, 'approved', { orderId: 'o-1', by: 'alice' })).toEqual({ delivered: true });
    await status(client, all.id, 'waiting');
    await client.sendEvent(all.id, 'a', 1);
    await client.sendEvent(all.id, 'b', 2);
    await eventually('the deadline won', async () => (await client.get(lapsed.id)).tasks?.some((s) => s.key === 'group:approval#1'));
    await client.sendEvent(approved.id, 'approved', { orderId: 'o-1', by: 'again' });
    await client.sendEvent(lapsed.id, 'approved', { orderId: 'o-2', by: 'bob' });

    expect((await result(client, approved.id)).output).toMatchObject({ first: { index: 0, value: { by: 'alice' } }, after: { data: { by: 'again' } } });
    expect((await result(client, lapsed.id)).output).toMatchObject({ first: { index: 1, value: null }, after: { data: { by: 'bob' } } });
    expect((await result(client, all.id)).output).toEqual([1, 2, 'computed', 42, null]);
  });

  it('wakes a run waiting at a group for a completion token', async () => {
    const run = await client.start(payment, { deadlineMs: 60_000 });
    const token = await tokenOf(client, run.id);
    await status(client, run.id, 'waiting');
    expect(await client.complete(token, { amount: 3 })).toEqual({ delivered: true });
    expect((await result(client, run.id)).output).toMatchObject({ first: { index: 0, value: { amount: 3 } } });
  });
});
