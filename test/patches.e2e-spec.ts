import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { ReplayDivergenceError, replayHistories } from '@nest-durable/worker';
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { runCli } from '../packages/client/src/cli/program';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';

type Input = { n: number; wait: 'sleep' | 'event' | 'none' };
type Output = { branch: 'old' | 'new'; charge: string };

/** Task functions that ran, by name: a replay must run none. */
const ran: string[] = [];
const task = (ctx: WorkflowContext, name: string, result: string) =>
  ctx.task(name, () => {
    ran.push(name);
    return result;
  });

/** Where v1's runs wait: an hour's sleep, or an event. */
async function waitAsAsked(ctx: WorkflowContext, input: Input): Promise<void> {
  if (input.wait === 'sleep') await ctx.sleep('cool-off', 3_600_000);
  if (input.wait === 'event') await ctx.waitForEvent('approved');
}

const declaration = { name: 'patched-order', version: '1' };
const v1 = defineWorkflow<Input, Output>({
  ...declaration,
  handler: async (ctx, input) => {
    const charge = await task(ctx, 'charge', `ch-${input.n}`);
    await waitAsAsked(ctx, input);
    await task(ctx, 'ship', 'shipped');
    return { branch: 'old', charge };
  },
});
/** v1 with a receipt after the charge, guarded: the runs v1 recorded past the charge keep the old branch. */
const guarded = defineWorkflow<Input, Output>({
  ...declaration,
  handler: async (ctx, input) => {
    const charge = await task(ctx, 'charge', `ch-${input.n}`);
    const patched = ctx.patched('receipt');
    if (patched) await task(ctx, 'receipt', 'sent');
    await waitAsAsked(ctx, input);
    await task(ctx, 'ship', 'shipped');
    return { branch: patched ? 'new' : 'old', charge };
  },
});
/** The same change, unguarded. */
const unguarded = defineWorkflow<Input, Output>({
  ...declaration,
  handler: async (ctx, input) => {
    const charge = await task(ctx, 'charge', `ch-${input.n}`);
    await task(ctx, 'receipt', 'sent');
    await waitAsAsked(ctx, input);
    await task(ctx, 'ship', 'shipped');
    return { branch: 'new', charge };
  },
});

/** Runs `wf` in this process; resolves with its exit code and output. */
async function wf(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [stdout, stderr] = [new PassThrough(), new PassThrough()];
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  stdout.on('data', (chunk: Buffer) => chunks.stdout.push(chunk));
  stderr.on('data', (chunk: Buffer) => chunks.stderr.push(chunk));
  const code = await runCli(args, { url }, { stdout, stderr });
  return { code, stdout: Buffer.concat(chunks.stdout).toString(), stderr: Buffer.concat(chunks.stderr).toString() };
}

describe('changing a workflow while runs are in flight: ctx.patched and replayHistories', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker | undefined;
  let client: WorkflowClient;
  let files: string;
  const inFlight: Record<'sleep' | 'event', RunView[]> = { sleep: [], event: [] };
  let finished: RunView[] = [];

  beforeAll(async () => {
    [db, files] = await Promise.all([createTestDatabase('patches'), mkdtemp(join(tmpdir(), 'patches-'))]);
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 100 });
    client = new WorkflowClient({ url: coordinator.url });

    // v1 records runs: two finished, two asleep, one waiting for an event.
    worker = await startCustomWorker(coordinator.url, { workflows: [v1] });
    const start = (n: number, wait: Input['wait']) => client.start(v1, { n, wait });
    const started = await Promise.all([start(1, 'none'), start(2, 'none'), start(3, 'sleep'), start(4, 'sleep'), start(5, 'event')]);
    finished = await Promise.all(started.slice(0, 2).map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
    const waiting = await Promise.all(
      started
        .slice(2)
        .map((run) => eventually(`run ${run.id} waiting`, async () => ((await client.get(run.id)).status === 'waiting' ? client.get(run.id) : undefined))),
    );
    inFlight.sleep = waiting.slice(0, 2);
    inFlight.event = waiting.slice(2);
    await worker.close();
    worker = undefined;
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
    await rm(files, { recursive: true, force: true });
  });

  it('recorded runs that finished and runs that wait in a sleep or for an event', () => {
    expect(finished.map((run) => [run.status, run.output])).toEqual([
      ['completed', { branch: 'old', charge: 'ch-1' }],
      ['completed', { branch: 'old', charge: 'ch-2' }],
    ]);
    expect([...inFlight.sleep, ...inFlight.event].map((run) => run.status)).toEqual(['waiting', 'waiting', 'waiting']);
  });

  it("replays the coordinator's histories against the guarded change without side effects, and fails the unguarded one naming the step", async () => {
    ran.length = 0;
    const results = await replayHistories(guarded, { coordinator: coordinator.url });
    expect(results.map((result) => result.stoppedAt).sort()).toEqual(['handler-end', 'handler-end', 'history-end', 'history-end', 'history-end']);
    expect(ran).toEqual([]);

    const failure = (await replayHistories(unguarded, { coordinator: client }).catch((error: unknown) => error)) as ReplayDivergenceError;
    expect(failure).toBeInstanceOf(ReplayDivergenceError);
    expect([...finished, ...inFlight.sleep, ...inFlight.event].map((run) => run.id)).toContain(failure.runId);
    expect(failure.step).toMatchObject({ seq: 1, called: { kind: 'task', key: 'receipt#1' } });
    expect(['sleep:cool-off#1', 'event:approved#1', 'ship#1']).toContain(failure.step.recorded?.key);
    expect(failure.message).toContain(`run ${failure.runId} diverges at step 1: its history holds`);
    expect(ran).toEqual([]);
  });

  it('does the same with the histories `wf runs export` wrote to a file', async () => {
    const file = join(files, 'patched-order.jsonl');
    const exported = await wf(coordinator.url, 'runs', 'export', 'patched-order', '1', '--out', file);
    expect(exported).toMatchObject({ code: 0, stdout: `exported 5 runs to ${file}\n` });
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(5);
    expect(Object.keys(JSON.parse(lines[0]))).toEqual(['run', 'steps']);

    const results = await replayHistories(guarded, { file });
    expect(results.map((result) => result.stoppedAt).sort()).toEqual(['handler-end', 'handler-end', 'history-end', 'history-end', 'history-end']);
    await expect(replayHistories(unguarded, { file })).rejects.toThrow(/diverges at step 1: its history holds .*, the code now calls task "receipt#1"/);

    // Without --out: the same lines on stdout.
    const printed = await wf(coordinator.url, 'runs', 'export', 'patched-order', '1', '--status', 'waiting');
    expect(
      printed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).run.id)
        .sort(),
    ).toEqual([...inFlight.sleep, ...inFlight.event].map((run) => run.id).sort());

    // Several statuses, comma-separated: each one's runs, newest first.
    const both = await wf(coordinator.url, 'runs', 'export', 'patched-order', '1', '--status', 'waiting,completed');
    expect(both.stdout.trim().split('\n')).toHaveLength(5);
    expect(await wf(coordinator.url, 'runs', 'export', 'patched-order', '1', '--status', 'waiting,asleep')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('"asleep" is not a run status'),
    });

    // An export that fails leaves no file behind, not even an empty one that looks complete.
    const failed = join(files, 'failed.jsonl');
    expect(await wf(coordinator.url, 'runs', 'export', 'not a name!', '1', '--out', failed)).toMatchObject({ code: 1 });
    expect(await readdir(files)).not.toContain('failed.jsonl');
    expect(await readdir(files)).not.toContain('failed.jsonl.partial');
  });

  it('deployed, the guarded code finishes the runs in flight on the old branch and takes new runs down the new one, its marker in their history', async () => {
    worker = await startCustomWorker(coordinator.url, { workflows: [guarded] });
    await Promise.all(inFlight.sleep.map((run) => client.wake(run.id)));
    await client.sendEvent(inFlight.event[0].id, 'approved', { by: 'ops' });
    const resumed = await Promise.all([...inFlight.sleep, ...inFlight.event].map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
    expect(resumed.map((run) => [run.status, (run.output as Output).branch])).toEqual([
      ['completed', 'old'],
      ['completed', 'old'],
      ['completed', 'old'],
    ]);

    const fresh = await client.start(guarded, { n: 6, wait: 'sleep' });
    const asleep = await eventually('the new run asleep', async () => ((await client.get(fresh.id)).status === 'waiting' ? client.get(fresh.id) : undefined));
    expect(asleep.tasks?.map((step) => [step.seq, step.kind, step.key, step.status])).toEqual([
      [0, 'task', 'charge#1', 'completed'],
      [1, 'patch', 'patch:receipt#1', 'completed'],
      [2, 'task', 'receipt#1', 'completed'],
      [3, 'sleep', 'sleep:cool-off#1', 'waiting'],
    ]);
    await client.wake(fresh.id);
    expect((await client.waitForResult(fresh.id, { timeoutMs: 10_000 })).output).toEqual({ branch: 'new', charge: 'ch-6' });

    // Every history now replays against the guarded code (the new run's marker is consumed), none against v1.
    await expect(replayHistories(guarded, { coordinator: client })).resolves.toHaveLength(6);
    await expect(replayHistories(v1, { coordinator: client })).rejects.toMatchObject({
      runId: fresh.id,
      step: { seq: 1, recorded: { kind: 'patch', key: 'patch:receipt#1' }, called: { kind: 'sleep', key: 'sleep:cool-off#1' } },
    });
  });
});
