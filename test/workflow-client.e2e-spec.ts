import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  type AnsweredError,
  CoordinatorUnavailableError,
  DeadLetterNotFoundError,
  DurableError,
  InvalidRequestError,
  JsonHttpClient,
  RunAlreadyTerminalError,
  RunNotFailedError,
  RunNotFoundError,
  RunNotSleepingError,
  WorkflowClient,
} from '@nest-durable/client';
import { approvalWorkflow, echoWorkflow, flakyWorkflow, orderProcessingWorkflow, sleepyWorkflow } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { startDeadLetteringCoordinator } from './support/dead-letters';
import { eventually } from './support/poll';
import { freePort } from './support/processes';

/**
 * The error answer `promise` rejects with, which must be an `errorClass` (the test fails if it resolves or fails
 * otherwise).
 */
async function httpError(promise: Promise<unknown>, errorClass: abstract new (...args: never[]) => DurableError): Promise<AnsweredError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(errorClass);
  return error as AnsweredError;
}

/** Every method of the typed client against a real coordinator and worker. */
describe('WorkflowClient', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('workflow_client');
    coordinator = await startCoordinator(db.url);
    worker = await startWorker(coordinator.url);
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  it('starts a run, waits for it and gets it with its steps', async () => {
    const run = await client.start(orderProcessingWorkflow, { orderId: 'c-1' }, { idempotencyKey: 'client-c-1', priority: 5 });
    expect(run).toMatchObject({ workflow: 'order-processing', version: '1.0.0', priority: 5, idempotencyKey: 'client-c-1' });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.output).toMatchObject({ orderId: 'c-1', status: 'shipped' });
    const fetched = await client.get(run.id);
    expect(fetched.tasks?.map((task) => [task.name, task.status])).toEqual([
      ['reserve-inventory', 'completed'],
      ['charge-payment', 'completed'],
      ['ship-order', 'completed'],
    ]);
  });

  it('starts many runs in one batch, in order, reusing an existing idempotency key', async () => {
    const existing = await client.start(echoWorkflow, 'first', { idempotencyKey: 'client-batch' });
    const runs = await client.startMany([
      { workflow: echoWorkflow, input: 1 },
      { workflow: echoWorkflow, input: 'ignored', idempotencyKey: 'client-batch' },
      { workflow: sleepyWorkflow, input: { ms: 1 }, runAt: new Date(Date.now() + 3_600_000), shard: 'eu' },
    ]);
    expect(runs.map((run) => run.workflow)).toEqual(['echo', 'echo', 'sleepy']);
    expect(runs[1]).toMatchObject({ id: existing.id, input: 'first' });
    expect(runs[2]).toMatchObject({ shard: 'eu', status: 'queued' });
    expect(Date.parse(runs[2].runAt!)).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('lists runs by workflow and status, a page at a time', async () => {
    const started = await Promise.all([1, 2, 3].map((n) => client.start(flakyWorkflow, { failTimes: 0 }, { idempotencyKey: `list-${n}` })));
    await Promise.all(started.map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
    const first = await client.list({ workflow: 'flaky', status: 'completed', limit: 2 });
    expect(first.runs).toHaveLength(2);
    expect(first.nextCursor).toBe(first.runs[1].id);
    const second = await client.list({ workflow: 'flaky', status: 'completed', limit: 2, cursor: first.nextCursor! });
    expect([...first.runs, ...second.runs].map((run) => run.id).sort()).toEqual(started.map((run) => run.id).sort());
    expect(second.nextCursor).toBeNull();
    expect((await client.list({ workflow: 'flaky', status: 'failed' })).runs).toEqual([]);
  });

  it('cancels a run, and refuses to cancel it twice with run_terminal', async () => {
    const run = await client.start(sleepyWorkflow, { ms: 3_600_000 }, { runAt: new Date(Date.now() + 3_600_000) });
    expect((await client.cancel(run.id)).status).toBe('cancelled');
    const error = await httpError(client.cancel(run.id), RunAlreadyTerminalError);
    expect(error).toMatchObject({ statusCode: 409, reason: 'run_terminal' });
    expect(error.message).toContain(run.id);
  });

  it('retries a failed run as its next attempt', async () => {
    const run = await client.start(flakyWorkflow, { failTimes: 1_000 });
    expect((await client.waitForResult(run.id, { timeoutMs: 10_000 })).status).toBe('failed');
    expect((await client.retry(run.id)).attempt).toBe(2);
    expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'failed', attempt: 2 });
    await expect(
      httpError(client.retry((await client.start(echoWorkflow, 1, { runAt: new Date(Date.now() + 3_600_000) })).id), RunNotFailedError),
    ).resolves.toMatchObject({
      statusCode: 409,
      reason: 'run_not_failed',
    });
  });

  it('wakes a sleeping run, which then completes', async () => {
    const run = await client.start(sleepyWorkflow, { ms: 3_600_000 });
    await eventually('the run asleep', async () => (await client.get(run.id)).status === 'waiting');
    await client.wake(run.id);
    expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: { sleptMs: 3_600_000 } });
    expect(await httpError(client.wake(run.id), RunNotSleepingError)).toMatchObject({ statusCode: 409, reason: 'run_not_sleeping' });
  });

  it('sends an event a run waits for, and one it does not wait for yet', async () => {
    const run = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 });
    await eventually('the run waiting for its event', async () => (await client.get(run.id)).status === 'waiting');
    expect(await client.sendEvent(run.id, 'approved', { by: 'ada' })).toEqual({ delivered: true });
    expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: { by: 'ada' } });
    const early = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 }, { runAt: new Date(Date.now() + 3_600_000) });
    expect(await client.sendEvent(early.id, 'approved')).toEqual({ delivered: false });
  });

  it('waits no longer than its timeout, and stops waiting when its signal aborts', async () => {
    const run = await client.start(sleepyWorkflow, { ms: 1 }, { runAt: new Date(Date.now() + 3_600_000) });
    expect((await client.waitForResult(run.id, { timeoutMs: 50 })).status).toBe('queued');
    const controller = new AbortController();
    const waiting = client.waitForResult(run.id, { timeoutMs: Infinity, signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await client.cancel(run.id);
  });

  it("rejects with the error class an answer's reason names, with its status, and CoordinatorUnavailableError when nothing answers", async () => {
    const missing = await httpError(client.get('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'), RunNotFoundError);
    expect(missing).toMatchObject({ name: 'RunNotFoundError', statusCode: 404, reason: 'run_not_found', nonRetryable: false });
    expect(missing.message).toBe('run 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b does not exist');
    expect(await httpError(client.get('not-a-uuid'), InvalidRequestError)).toMatchObject({ statusCode: 400, reason: 'invalid_run_id' });
    expect(await httpError(client.list({ limit: 0 }), InvalidRequestError)).toMatchObject({ statusCode: 400, reason: 'invalid_limit' });
    // A reason no class carries (the HTTP layer's own) is a DurableError of that reason.
    const unrouted = await httpError(new JsonHttpClient(coordinator.url).request('GET', '/v1/no-such-route'), DurableError);
    expect([unrouted.constructor, unrouted.statusCode, unrouted.reason]).toEqual([DurableError, 404, 'route_not_found']);
    const nowhere = new WorkflowClient({ url: `http://127.0.0.1:${await freePort()}` });
    await expect(nowhere.get('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')).rejects.toBeInstanceOf(CoordinatorUnavailableError);
  });

  describe('dead letters', () => {
    let deadDb: TestDatabase;
    let dead: RunningCoordinator;
    let deadClient: WorkflowClient;

    beforeAll(async () => {
      deadDb = await createTestDatabase('workflow_client_dead');
      dead = await startDeadLetteringCoordinator(deadDb.url);
      deadClient = new WorkflowClient({ url: dead.url });
    });

    afterAll(async () => {
      await dead?.close();
      await deadDb?.drop();
    });

    it('lists, redrives and deletes dead letters', async () => {
      const [redriven, deleted] = await deadClient.startMany([
        { workflow: echoWorkflow, input: 1 },
        { workflow: echoWorkflow, input: 2 },
      ]);
      const page = await eventually('both runs dead-lettered', async () => {
        const found = await deadClient.listDeadLetters();
        return found.deadLetters.length === 2 ? found : undefined;
      });
      const letterOf = new Map(page.deadLetters.map((letter) => [letter.runId, letter]));
      expect(letterOf.get(redriven.id)).toMatchObject({ origin: 'outbox', reason: 'publish_failed', queue: 'echo:1' });
      const firstPage = await deadClient.listDeadLetters({ limit: 1 });
      expect(firstPage.deadLetters).toHaveLength(1);
      expect((await deadClient.listDeadLetters({ limit: 1, cursor: firstPage.nextCursor! })).deadLetters).toHaveLength(1);

      expect(await deadClient.redriveDeadLetter(letterOf.get(redriven.id)!.id)).toEqual({ action: 'republished', runStatus: 'queued' });
      await deadClient.deleteDeadLetter(letterOf.get(deleted.id)!.id);
      const remaining = (await deadClient.listDeadLetters()).deadLetters.map((letter) => letter.id);
      expect(remaining).not.toContain(letterOf.get(deleted.id)!.id);
      expect(remaining).not.toContain(letterOf.get(redriven.id)!.id);
      expect(await httpError(deadClient.deleteDeadLetter(letterOf.get(deleted.id)!.id), DeadLetterNotFoundError)).toMatchObject({
        statusCode: 404,
        reason: 'dead_letter_not_found',
      });
    });
  });
});
