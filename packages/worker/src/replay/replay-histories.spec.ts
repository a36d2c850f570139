import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { historyLine, type RecordedHistory, type RunStatus, type RunView, type TaskView } from '@nest-durable/client';
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { Workflow } from '../workflow.decorator';
import { ReplayDivergenceError, ReplayOutcomeError, replayHistories } from './replay-histories';

const ran: string[] = [];
const AT = '2026-01-01T00:00:00.000Z';

function stepView(key: string, kind: TaskView['kind'], seq: number, output: unknown = null, status: TaskView['status'] = 'completed'): TaskView {
  const name = key.replace(/^\w+:/, '').replace(/#\d+$/, '');
  return {
    key,
    kind,
    seq,
    name,
    status,
    attempts: 1,
    output: output as never,
    error: null,
    createdAt: AT,
    startedAt: AT,
    finishedAt: AT,
    wakeAt: null,
    childId: null,
  };
}

/** As `wf runs export` writes it: the whole run view, and its steps' views. */
function history(id: string, status: RunStatus, steps: TaskView[]): RecordedHistory {
  const run: RunView = {
    id,
    workflow: 'order',
    version: '1',
    status,
    revision: 3,
    attempt: 1,
    priority: 0,
    stalls: 0,
    buildId: null,
    input: { amount: 5 },
    output: null,
    error: null,
    idempotencyKey: null,
    shard: null,
    concurrencyKey: null,
    paused: false,
    parentId: null,
    tags: {},
    runAt: null,
    createdAt: AT,
    updatedAt: AT,
    startedAt: AT,
    finishedAt: null,
    progress: null,
    progressAt: null,
  };
  return { run, steps };
}

/** Histories v1 recorded: charge, sleep, ship. */
const finished = history('00000000-0000-7000-8000-000000000001', 'completed', [
  stepView('charge#1', 'task', 0, 'ch_1'),
  stepView('sleep:cool-off#1', 'sleep', 1),
  stepView('ship#1', 'task', 2, 'shipped'),
]);
const sleeping = history('00000000-0000-7000-8000-000000000002', 'waiting', [
  stepView('charge#1', 'task', 0, 'ch_2'),
  stepView('sleep:cool-off#1', 'sleep', 1, null, 'waiting'),
]);
const queued = history('00000000-0000-7000-8000-000000000003', 'queued', []);

const task = (ctx: WorkflowContext, name: string) =>
  ctx.task(name, () => {
    ran.push(name);
    return name;
  });

const v1 = defineWorkflow<{ amount: number }, string>({
  name: 'order',
  version: '1',
  handler: async (ctx) => {
    await task(ctx, 'charge');
    await ctx.sleep('cool-off', 60_000);
    await task(ctx, 'ship');
    return 'done';
  },
});
/** A receipt task before shipping, guarded. */
const guarded = defineWorkflow<{ amount: number }, string>({
  ...v1,
  handler: async (ctx) => {
    await task(ctx, 'charge');
    await ctx.sleep('cool-off', 60_000);
    if (ctx.patched('receipt')) await task(ctx, 'receipt');
    await task(ctx, 'ship');
    return 'done';
  },
});
/** The same change, unguarded. */
const unguarded = defineWorkflow<{ amount: number }, string>({
  ...v1,
  handler: async (ctx) => {
    await task(ctx, 'charge');
    await ctx.sleep('cool-off', 60_000);
    await task(ctx, 'receipt');
    await task(ctx, 'ship');
    return 'done';
  },
});

describe('replayHistories', () => {
  const directory = mkdtempSync(join(tmpdir(), 'replay-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  beforeEach(() => {
    ran.length = 0;
  });

  it('replays the histories the code recorded: finished runs to their end, runs in flight to where their history ends', async () => {
    const results = await replayHistories(v1, { histories: [finished, sleeping, queued] });
    expect(results).toEqual([
      { runId: finished.run.id, status: 'completed', stoppedAt: 'handler-end' },
      { runId: sleeping.run.id, status: 'waiting', stoppedAt: 'history-end' },
      { runId: queued.run.id, status: 'queued', stoppedAt: 'history-end' },
    ]);
    expect(ran).toEqual([]);
  });

  it('passes a change guarded by ctx.patched: the recorded runs take the old branch, and no task runs', async () => {
    await expect(replayHistories(guarded, { histories: [finished, sleeping, queued] })).resolves.toHaveLength(3);
    expect(ran).toEqual([]);
  });

  it('fails an unguarded change on the first run it diverges from, naming the run, the step and both versions of it', async () => {
    const failure = await replayHistories(unguarded, { histories: [sleeping, finished] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ReplayDivergenceError);
    expect(failure).toMatchObject({
      runId: finished.run.id,
      step: { seq: 2, recorded: { kind: 'task', key: 'ship#1' }, called: { kind: 'task', key: 'receipt#1' } },
      reason: 'non_determinism',
    });
    expect((failure as Error).message).toBe(`run ${finished.run.id} diverges at step 2: its history holds task "ship#1", the code now calls task "receipt#1"`);
  });

  it("fails code that ends before its run's history does, and a completed run whose replay now throws", async () => {
    const shortened = defineWorkflow<{ amount: number }, string>({ ...v1, handler: async (ctx) => task(ctx, 'charge') });
    await expect(replayHistories(shortened, { histories: [finished] })).rejects.toThrow(
      `diverges at step 1: its history holds sleep "sleep:cool-off#1", the code now ends there`,
    );
    const throwing = defineWorkflow<{ amount: number }, string>({
      ...v1,
      handler: async (ctx) => {
        await v1.handler(ctx, { amount: 5 });
        throw new TypeError('receipt is undefined');
      },
    });
    const failure = await replayHistories(throwing, { histories: [finished] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ReplayOutcomeError);
    expect(failure).toMatchObject({ runId: finished.run.id, reason: 'replay_outcome_changed' });
    expect((failure as Error).message).toBe(`run ${finished.run.id} completed, but its replay by the code under test throws: receipt is undefined`);
  });

  it('stops a divergence the handler catches: every later step throws it again', async () => {
    const swallowing = defineWorkflow<{ amount: number }, string>({
      ...v1,
      handler: async (ctx) => {
        try {
          await task(ctx, 'refund');
        } catch {
          await task(ctx, 'charge');
        }
        return 'done';
      },
    });
    await expect(replayHistories(swallowing, { histories: [finished] })).rejects.toThrow(
      'diverges at step 0: its history holds task "charge#1", the code now calls task "refund#1"',
    );
  });

  it('reads the histories of a file `wf runs export` wrote, and replays a @Workflow instance', async () => {
    const file = join(directory, 'order.jsonl');
    writeFileSync(file, [finished, sleeping].map(historyLine).join(''));
    @Workflow({ name: 'order', version: '1' })
    class OrderWorkflow {
      run(ctx: WorkflowContext, input: { amount: number }) {
        return unguarded.handler(ctx, input);
      }
    }
    await expect(replayHistories(guarded, { file })).resolves.toHaveLength(2);
    await expect(replayHistories(new OrderWorkflow(), { file })).rejects.toBeInstanceOf(ReplayDivergenceError);

    writeFileSync(file, `${historyLine(finished)}{"run": 1}\n`);
    await expect(replayHistories(v1, { file })).rejects.toThrow('line 2 is not a recorded history');
  });

  it("answers events and children as they were recorded, and a patch decided on new ground as a run's first execution would", async () => {
    const childId = '00000000-0000-7000-8000-0000000000c1';
    const seen: unknown[] = [];
    const waits = defineWorkflow<{ amount: number }, string>({
      ...v1,
      handler: async (ctx) => {
        seen.push(await ctx.waitForEvent('approved'));
        seen.push(await ctx.child('label', { name: 'label', version: '1' }, {}));
        seen.push(await ctx.startChild('audit', { name: 'audit', version: '1' }, {}));
        seen.push(ctx.patched('receipt'));
        await task(ctx, 'receipt');
        return 'done';
      },
    });
    const recorded = history('00000000-0000-7000-8000-000000000004', 'running', [
      stepView('event:approved#1', 'event', 0, { timedOut: false, data: { by: 'ops' } }),
      stepView('child:label#1', 'child', 1, { timedOut: false, childId, status: 'completed', output: 'L-1', error: null }),
      stepView('child:audit#1', 'child', 2, { childId }),
    ]);
    await expect(replayHistories(waits, { histories: [recorded] })).resolves.toEqual([{ runId: recorded.run.id, status: 'running', stoppedAt: 'history-end' }]);
    expect(seen).toEqual([{ timedOut: false, data: { by: 'ops' } }, 'L-1', childId, true]);
    expect(ran).toEqual([]);
  });

  it('refuses a history of another workflow version than the code under test', async () => {
    const other = { ...finished, run: { ...finished.run, version: '2' } };
    await expect(replayHistories(v1, { histories: [other] })).rejects.toThrow(
      `run ${finished.run.id} is of workflow order 2, not of the code under test (order 1)`,
    );
  });
});
