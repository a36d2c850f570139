import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CompletionTokenExpiredError,
  CompletionTokenNotFoundError,
  CompletionTokenUsedError,
  InvalidRequestError,
  type JsonValue,
  WorkflowClient,
} from '@nest-durable/client';
import { CompletionFailedError, CompletionTimeoutError, defineWorkflow } from '@nest-durable/workflow';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { workerModuleOptions } from '../apps/worker/src/worker-app.module';
import { runCli } from '../packages/client/src/cli/program';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';

type Input = { timeoutMs?: number; waitFirst?: boolean };
type Output = { outcome: 'completed'; data: JsonValue } | { outcome: 'failed'; details: JsonValue } | { outcome: 'timedOut' };

/** Every token each execution of a run got from ctx.awaitExternal (a re-execution must get the same), by run. */
const tokensSeen = new Map<string, string[]>();
/** The token each run handed out, from its task (what a payment provider would have been sent). */
const handedOut = new Map<string, string>();

const payment = defineWorkflow<Input, Output>({
  name: 'external-payment',
  version: '1',
  handler: async (ctx, input) => {
    const { token, result } = await ctx.awaitExternal<JsonValue>({ name: 'payment', timeoutMs: input.timeoutMs });
    tokensSeen.set(ctx.runId, [...(tokensSeen.get(ctx.runId) ?? []), token]);
    await ctx.task('request-payment', () => {
      handedOut.set(ctx.runId, token);
    });
    // The run suspends elsewhere first: an outcome sent meanwhile is kept until it waits on the token.
    if (input.waitFirst) await ctx.waitForEvent('go');
    try {
      return { outcome: 'completed', data: await result };
    } catch (error) {
      if (error instanceof CompletionFailedError) return { outcome: 'failed', details: { ...error.details } };
      if (error instanceof CompletionTimeoutError) return { outcome: 'timedOut' };
      throw error;
    }
  },
});

const CLIENT_TOKEN = 'client-secret';
const WORKER_TOKEN = 'worker-secret';

/** Runs `wf` in this process, without a client token; resolves with its exit code and output. */
async function wf(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [stdout, stderr] = [new PassThrough(), new PassThrough()];
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  stdout.on('data', (chunk: Buffer) => chunks.stdout.push(chunk));
  stderr.on('data', (chunk: Buffer) => chunks.stderr.push(chunk));
  const code = await runCli(args, { url }, { stdout, stderr });
  return { code, stdout: Buffer.concat(chunks.stdout).toString(), stderr: Buffer.concat(chunks.stderr).toString() };
}

/** A coordinator (with API tokens required), a worker hosting `payment`, and the client, in one dispatch mode. */
async function startStack(suite: string, mode: 'http' | 'redis-streams') {
  const db = await createTestDatabase(suite);
  const prefix = testPrefix(suite);
  const coordinator = await startCoordinator(db.url, {
    authDisabled: false,
    clientToken: CLIENT_TOKEN,
    workerToken: WORKER_TOKEN,
    claimPollIntervalMs: 200,
    ...(mode === 'http' ? {} : { dispatch: mode, redisPrefix: prefix, streamPartitions: 2 }),
  });
  const config = loadWorkerConfig({
    COORDINATOR_URL: coordinator.url,
    WORKER_TOKEN,
    SUBSCRIBER: mode,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    // Short blocking reads: closing the worker waits for the one in flight.
    REDIS_BLOCK_MS: '200',
  });
  const worker = await startCustomWorker(coordinator.url, workerModuleOptions(config, [payment]));
  const client = new WorkflowClient({ url: coordinator.url, token: CLIENT_TOKEN });
  return { db, coordinator, worker, client };
}

describe('completion tokens (ctx.awaitExternal, POST /v1/completions/:token)', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;
  /** The outside system: no client token. */
  let outside: WorkflowClient;

  beforeAll(async () => {
    ({ db, coordinator, worker, client } = await startStack('completion_tokens', 'http'));
    outside = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  /** Starts a run and waits until it is suspended (on its token, or at `go`); its handed-out token. */
  async function waitingRun(input: Input): Promise<{ id: string; token: string }> {
    const { id } = await client.start(payment, input);
    await eventually(`run ${id} waiting`, async () => (await client.get(id)).status === 'waiting');
    return { id, token: handedOut.get(id)! };
  }

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error as Error & { statusCode: number; reason: string },
    );

  it('completes a waiting run with the data sent without a client token, the same token on every execution; a second completion is 409', async () => {
    const run = await waitingRun({});
    expect(run.token).toMatch(/^wfct_[A-Za-z0-9_-]{43}$/);
    // Only this route is open: the run itself is not readable without the client token.
    expect(await refusal(outside.get(run.id))).toMatchObject({ statusCode: 401 });

    expect(await outside.complete(run.token, { paid: true, amount: 42 })).toEqual({ delivered: true });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ status: 'completed', output: { outcome: 'completed', data: { paid: true, amount: 42 } } });
    expect(tokensSeen.get(run.id)).toEqual([run.token, run.token]);
    expect((await client.get(run.id)).tasks?.map((step) => [step.kind, step.key, step.status])).toEqual([
      ['token', 'token:payment#1', 'completed'],
      ['task', 'request-payment#1', 'completed'],
      ['external', 'external:payment#1', 'completed'],
    ]);

    const second = await refusal(outside.complete(run.token, { paid: false }));
    expect(second).toBeInstanceOf(CompletionTokenUsedError);
    expect(second).toMatchObject({ statusCode: 409, reason: 'completion_token_used' });
  });

  it('keeps an outcome sent before the run waits on the token, and delivers it when it does', async () => {
    const run = await waitingRun({ waitFirst: true });
    expect(await outside.complete(run.token, 'approved')).toEqual({ delivered: false });
    expect((await client.get(run.id)).status).toBe('waiting');
    await client.sendEvent(run.id, 'go');
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.output).toEqual({ outcome: 'completed', data: 'approved' });
    // The wait resolved as it was recorded: the run did not suspend on it.
    const transitions = await client.transitions(run.id);
    expect(transitions.items.filter((t) => t.to === 'waiting')).toHaveLength(1);
  });

  it('fails the step with the error sent (`wf complete --fail`): the workflow catches a CompletionFailedError with its data', async () => {
    const run = await waitingRun({});
    const sent = await wf(coordinator.url, 'complete', run.token, '--fail', 'card declined', '--error-name', 'CardDeclined', '--data', '{"code":51}');
    expect(sent).toEqual({ code: 0, stdout: 'step failed: its run resumes\n', stderr: '' });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.output).toEqual({ outcome: 'failed', details: { name: 'CardDeclined', message: 'card declined', data: { code: 51 } } });
  });

  it('times the wait out at the token timeout (CompletionTimeoutError); a late completion is 410 and changes nothing', async () => {
    const run = await waitingRun({ timeoutMs: 300 });
    const done = await client.waitForResult(run.id, { timeoutMs: 10_000 });
    expect(done.output).toEqual({ outcome: 'timedOut' });
    const late = await refusal(outside.complete(run.token, { paid: true }));
    expect(late).toBeInstanceOf(CompletionTokenExpiredError);
    expect(late).toMatchObject({ statusCode: 410, reason: 'completion_token_expired' });
    const [token] = await db.sql<{ completed: boolean }>(`SELECT completed_at IS NOT NULL AS completed FROM completion_tokens WHERE token = $1`, [run.token]);
    expect(token).toEqual({ completed: false });
  });

  it('refuses an unknown token (404), a malformed one (400) and a body with both data and error (400), changing nothing', async () => {
    const unknown = await refusal(outside.complete(`wfct_${'x'.repeat(43)}`, 1));
    expect(unknown).toBeInstanceOf(CompletionTokenNotFoundError);
    expect(unknown).toMatchObject({ statusCode: 404, reason: 'completion_token_not_found' });
    expect(await wf(coordinator.url, 'complete', 'not-a-token')).toMatchObject({ code: 1, stderr: expect.stringContaining('invalid_completion_token') });

    const run = await waitingRun({});
    const response = await fetch(`${coordinator.url}/v1/completions/${run.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: 1, error: { message: 'no' } }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ reason: 'invalid_completion' });
    expect(await refusal(outside.fail(run.token, { message: 'x'.repeat(256) }))).toBeInstanceOf(InvalidRequestError);
    expect((await client.get(run.id)).status).toBe('waiting');

    // The token still takes its one completion.
    expect(await outside.complete(run.token)).toEqual({ delivered: true });
    expect((await client.waitForResult(run.id, { timeoutMs: 10_000 })).output).toEqual({ outcome: 'completed', data: null });
  });

  it("goes with its run: a deleted run's tokens are gone (404)", async () => {
    const run = await waitingRun({});
    await client.cancel(run.id);
    await db.sql(`SELECT delete_runs(ARRAY[$1]::uuid[])`, [run.id]);
    expect(await db.sql(`SELECT token FROM completion_tokens WHERE run_id = $1`, [run.id])).toEqual([]);
    expect(await refusal(outside.complete(run.token))).toBeInstanceOf(CompletionTokenNotFoundError);
  });
});

describe('completion tokens in Redis Streams dispatch', () => {
  let stack: Awaited<ReturnType<typeof startStack>>;

  beforeAll(async () => {
    stack = await startStack('completion_tokens_streams', 'redis-streams');
  });

  afterAll(async () => {
    await stack?.worker.close();
    await stack?.coordinator.close();
    await stack?.db.drop();
  });

  it('a completion wakes the waiting run through the outbox and its stream', async () => {
    const { client, coordinator } = stack;
    const { id } = await client.start(payment, {});
    await eventually(`run ${id} waiting`, async () => (await client.get(id)).status === 'waiting');
    const token = handedOut.get(id)!;
    expect(await new WorkflowClient({ url: coordinator.url }).complete(token, { paid: true })).toEqual({ delivered: true });
    expect((await client.waitForResult(id, { timeoutMs: 10_000 })).output).toEqual({ outcome: 'completed', data: { paid: true } });
    expect(tokensSeen.get(id)).toEqual([token, token]);
  });
});
