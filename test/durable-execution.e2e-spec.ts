import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunView } from '@nest-durable/client';
import { defineWorkflow, WorkflowError } from '@nest-durable/workflow';
import { JSON_MAX_BYTES, WorkflowClient } from '@nest-durable/client';
import request from 'supertest';
import { EXAMPLE_WORKFLOWS } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';

/** Counts executions of test tasks (the worker runs in this process). */
const executions = new Map<string, number>();
const count = (key: string) => executions.set(key, (executions.get(key) ?? 0) + 1).get(key)!;

/** Fails its first `failAttempts` run attempts after one completed task; retried at the workflow level. */
const retriedWorkflow = defineWorkflow<{ failAttempts: number; tag: string }, { attempt: number }>({
  name: 'retried',
  version: '1',
  retry: { maxAttempts: 3, backoff: 'fixed', delayMs: 50 },
  handler: async (ctx, input) => {
    await ctx.task('prepare', () => count(`${input.tag}:prepare`));
    await ctx.task('flaky-part', () => {
      count(`${input.tag}:flaky-part`);
      if (ctx.attempt <= input.failAttempts) throw new Error(`attempt ${ctx.attempt} fails`);
      return ctx.attempt;
    });
    return { attempt: ctx.attempt };
  },
});

/** Its task declines for good on the first attempt, though both it and the workflow would retry. */
const declinedWorkflow = defineWorkflow<{ tag: string }, null>({
  name: 'declined',
  version: '1',
  retry: { maxAttempts: 3, backoff: 'fixed', delayMs: 50 },
  handler: async (ctx, input) => {
    await ctx.task(
      'charge',
      () => {
        count(input.tag);
        throw new WorkflowError('card declined', { nonRetryable: true });
      },
      { retry: { maxAttempts: 5, backoff: 'fixed', delayMs: 10 } },
    );
    return null;
  },
});

/** Its task's retry waits are longer than the in-process limit, so the run suspends between attempts. */
const slowRetryWorkflow = defineWorkflow<{ tag: string }, { attempts: number }>({
  name: 'slow-retry',
  version: '1',
  handler: async (ctx, input) => {
    const attempts = await ctx.task(
      'call',
      ({ attempt }) => {
        count(input.tag);
        if (attempt < 3) throw new Error('not yet');
        return attempt;
      },
      { retry: { maxAttempts: 3, backoff: 'fixed', delayMs: 300 } },
    );
    return { attempts };
  },
});

/** A task that ignores its time limit; the attempt fails with TaskTimeoutError anyway. */
const timeoutWorkflow = defineWorkflow<Record<string, never>, null>({
  name: 'times-out',
  version: '1',
  handler: async (ctx) => {
    await ctx.task('hang', ({ signal }) => new Promise<null>((resolve) => signal.addEventListener('abort', () => setTimeout(() => resolve(null), 5_000))), {
      timeoutMs: 100,
    });
    return null;
  },
});

/** Fails while `switchOff` holds its tag, for the manual retry API. */
const switchOff = new Set<string>();
const switchedWorkflow = defineWorkflow<{ tag: string }, { ok: boolean }>({
  name: 'switched',
  version: '1',
  handler: async (ctx, input) => {
    await ctx.task('before', () => count(`${input.tag}:before`));
    await ctx.task('gate', () => {
      if (switchOff.has(input.tag)) throw new Error('switched off');
      return true;
    });
    return { ok: true };
  },
});

/** Returns more than a run's output may hold. */
const oversizedWorkflow = defineWorkflow<Record<string, never>, string>({
  name: 'oversized',
  version: '1',
  handler: async () => 'x'.repeat(JSON_MAX_BYTES),
});

describe('durable execution', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await createTestDatabase('durable');
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 100 });
    worker = await startCustomWorker(coordinator.url, {
      workflows: [...EXAMPLE_WORKFLOWS, retriedWorkflow, slowRetryWorkflow, timeoutWorkflow, switchedWorkflow, declinedWorkflow, oversizedWorkflow],
      inProcessRetryMaxMs: 100,
      concurrency: 20,
    });
    client = new WorkflowClient({ url: coordinator.url });
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const transitions = async (runId: string) =>
    (
      await db.sql<{ from_status: string | null; to_status: string }>('SELECT from_status, to_status FROM run_transitions WHERE run_id = $1 ORDER BY id', [
        runId,
      ])
    ).map((t) => `${t.from_status ?? 'new'}>${t.to_status}`);
  const finish = (run: RunView, timeoutMs = 15_000) => client.waitForResult(run.id, { timeoutMs });
  const statusOf = async (runId: string) => (await client.get(runId)).status;

  describe('durable sleep', () => {
    it('suspends the run, frees the worker, and continues after the wake time', async () => {
      const run = await client.start({ name: 'sleepy', version: '1' }, { ms: 300 });
      const done = await finish(run);
      expect(done).toMatchObject({ status: 'completed', output: { sleptMs: 300 } });
      expect(Date.parse(done.finishedAt!) - Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(300);
      expect(await transitions(run.id)).toEqual(['new>queued', 'queued>running', 'running>waiting', 'waiting>running', 'running>completed']);
      expect(done.tasks).toEqual([expect.objectContaining({ key: 'sleep:nap#1', kind: 'sleep', status: 'completed' })]);
    });

    it('does not suspend for a zero sleep', async () => {
      const done = await finish(await client.start({ name: 'sleepy', version: '1' }, { ms: 0 }));
      expect(done).toMatchObject({ status: 'completed', output: { sleptMs: 0 } });
      expect(await transitions(done.id)).toEqual(['new>queued', 'queued>running', 'running>completed']);
    });

    it('sleeps for years unless woken early through the API', async () => {
      const tenYears = 10 * 365 * 24 * 3600 * 1000;
      const run = await client.start({ name: 'sleepy', version: '1' }, { ms: tenYears });
      await eventually('the run to sleep', async () => (await statusOf(run.id)) === 'waiting');
      const sleeping = await client.get(run.id);
      expect(Date.parse(sleeping.runAt!)).toBeGreaterThan(Date.now() + tenYears - 60_000);

      await http().post(`/v1/runs/${run.id}/wake`).expect(200);
      expect(await finish(run)).toMatchObject({ status: 'completed', output: { sleptMs: tenYears } });
      const again = await http().post(`/v1/runs/${run.id}/wake`).expect(409);
      expect(again.body.reason).toBe('run_not_sleeping');
    });
  });

  describe('events', () => {
    it('resumes a waiting run when its event arrives, with the event data', async () => {
      const run = await client.start({ name: 'approval', version: '1' }, { timeoutMs: 60_000 });
      await eventually('the run to wait', async () => (await statusOf(run.id)) === 'waiting');
      const sent = await http()
        .post(`/v1/runs/${run.id}/events/approved`)
        .send({ data: { by: 'alice' } })
        .expect(202);
      expect(sent.body).toEqual({ delivered: true });
      expect(await finish(run)).toMatchObject({ status: 'completed', output: { by: 'alice' } });
    });

    it('keeps an event sent before the run waits for it', async () => {
      const run = await client.start({ name: 'approval', version: '1' }, { timeoutMs: 60_000 }, { runAt: new Date(Date.now() + 1_000) });
      const sent = await http().post(`/v1/runs/${run.id}/events/approved`).send({ data: 'early' }).expect(202);
      expect(sent.body).toEqual({ delivered: false });
      const done = await finish(run);
      expect(done).toMatchObject({ status: 'completed', output: 'early' });
      // It never had to suspend: the event was waiting for it.
      expect(await transitions(run.id)).toEqual(['new>queued', 'queued>running', 'running>completed']);
    });

    it('resolves a wait that times out as a timeout, not an error', async () => {
      const done = await finish(await client.start({ name: 'approval', version: '1' }, { timeoutMs: 200 }));
      expect(done).toMatchObject({ status: 'completed', output: { timedOut: true } });
    });

    it('refuses events for finished runs and bad event names', async () => {
      const done = await finish(await client.start({ name: 'echo', version: '1' }, 1));
      const late = await http().post(`/v1/runs/${done.id}/events/approved`).send({ data: 1 }).expect(409);
      expect(late.body.reason).toBe('run_terminal');
      const bad = await http().post(`/v1/runs/${done.id}/events/bad:name`).send({ data: 1 }).expect(400);
      expect(bad.body.reason).toBe('invalid_event_name');
      await http().post('/v1/runs/01a22c37-316c-762f-a717-4521456009df/events/approved').send({}).expect(404);
    });
  });

  describe('child runs', () => {
    it('starts a child, waits for it and returns its output', async () => {
      const done = await finish(await client.start({ name: 'parent', version: '1' }, { steps: 3 }));
      expect(done).toMatchObject({ status: 'completed', output: { steps: 3 } });
      const [step] = done.tasks!;
      expect(step).toMatchObject({ kind: 'child', key: 'child:chain#1', status: 'completed' });
      const childId = (step.output as { childId: string }).childId;
      expect(await client.get(childId)).toMatchObject({ workflow: 'chain', parentId: done.id, status: 'completed' });
      expect(await transitions(done.id)).toContain('running>waiting');
    });

    it('cancelling a parent cancels its unfinished children', async () => {
      const parent = await client.start({ name: 'parent', version: '1' }, { steps: 1000, stepMs: 20 });
      const child = await eventually('the child run to start', async () => {
        const page = await client.list({ workflow: 'chain', status: 'running' });
        return page.runs.find((run) => run.parentId === parent.id);
      });
      const cancelled = await http().post(`/v1/runs/${parent.id}/cancel`).expect(200);
      expect(cancelled.body.status).toBe('cancelled');
      expect((await client.get(child.id)).status).toBe('cancelled');
    });
  });

  describe('retries', () => {
    it('retries a failed run at the workflow level, resuming from its completed tasks', async () => {
      const done = await finish(await client.start(retriedWorkflow, { failAttempts: 2, tag: 'wf-retry' }));
      expect(done).toMatchObject({ status: 'completed', attempt: 3, output: { attempt: 3 } });
      expect(executions.get('wf-retry:prepare')).toBe(1);
      expect(executions.get('wf-retry:flaky-part')).toBe(3);
    });

    it('fails the run once its workflow-level attempts run out', async () => {
      const done = await finish(await client.start(retriedWorkflow, { failAttempts: 5, tag: 'wf-exhausted' }));
      expect(done).toMatchObject({ status: 'failed', attempt: 3, error: { message: 'attempt 3 fails' } });
    });

    it('a nonRetryable error fails its task at once and its run without a workflow-level retry', async () => {
      const done = await finish(await client.start(declinedWorkflow, { tag: 'declined' }));
      expect(done).toMatchObject({ status: 'failed', attempt: 1, error: { name: 'WorkflowError', message: 'card declined' } });
      expect(done.tasks).toEqual([expect.objectContaining({ key: 'charge#1', status: 'failed', attempts: 1 })]);
      expect(executions.get('declined')).toBe(1);
      expect(await transitions(done.id)).toEqual(['new>queued', 'queued>running', 'running>failed']);
    });

    it('fails a run whose output the coordinator refuses (over the size limit) at once, with the refusal as its error', async () => {
      const done = await finish(await client.start(oversizedWorkflow, {}));
      expect(done).toMatchObject({
        status: 'failed',
        attempt: 1,
        stalls: 0,
        error: { name: 'InvalidRequestError', message: expect.stringContaining(`the limit is ${JSON_MAX_BYTES}`), nonRetryable: true },
      });
      expect(await transitions(done.id)).toEqual(['new>queued', 'queued>running', 'running>failed']);
    });

    it('suspends the run during a long task retry wait instead of holding the worker', async () => {
      const done = await finish(await client.start(slowRetryWorkflow, { tag: 'slow-retry' }));
      expect(done).toMatchObject({ status: 'completed', output: { attempts: 3 } });
      expect(executions.get('slow-retry')).toBe(3);
      expect((await transitions(done.id)).filter((t) => t === 'running>waiting')).toHaveLength(2);
    });

    it('times out a task attempt through its AbortSignal', async () => {
      const done = await finish(await client.start(timeoutWorkflow, {}));
      expect(done).toMatchObject({ status: 'failed', error: { name: 'TaskTimeoutError' } });
    });

    it('retries a failed run through the API as its next attempt', async () => {
      switchOff.add('manual');
      const failed = await finish(await client.start(switchedWorkflow, { tag: 'manual' }));
      expect(failed).toMatchObject({ status: 'failed', attempt: 1 });
      switchOff.delete('manual');
      const retried = await http().post(`/v1/runs/${failed.id}/retry`).expect(200);
      // The worker may take it before the response is read back.
      expect(retried.body.attempt).toBe(2);
      expect(['queued', 'running', 'completed']).toContain(retried.body.status);
      expect(await finish(failed)).toMatchObject({ status: 'completed', attempt: 2, output: { ok: true } });
      expect(executions.get('manual:before')).toBe(1);
      const again = await http().post(`/v1/runs/${failed.id}/retry`).expect(409);
      expect(again.body.reason).toBe('run_not_failed');
    });
  });

  it('on shutdown, a worker releases unfinished runs so another worker takes them at once', async () => {
    // The default claim idle time (90 s) is far beyond this test's timeout: only the release can hand the run over.
    const leaving = await startCustomWorker(coordinator.url, { workflows: EXAMPLE_WORKFLOWS, workerId: 'leaving', shutdownGraceMs: 100 });
    await worker.close();
    const run = await client.start({ name: 'chain', version: '1' }, { steps: 40, stepMs: 50 });
    await eventually('the leaving worker to record a step', async () => ((await client.get(run.id)).tasks?.length ?? 0) >= 2);
    await leaving.close();
    // Before 'leaving' claimed it, the run may have been handed to the claim of the worker closed above, if the
    // coordinator had not yet read that its connection closed: that claim gave it back at once (a second pair).
    const history = await db.sql<{ step: string }>(
      `SELECT from_status || '>' || to_status || ' ' || worker_id AS step FROM run_transitions WHERE run_id = $1 AND from_status IS NOT NULL ORDER BY id`,
      [run.id],
    );
    expect(history.slice(-2).map((row) => row.step)).toEqual(['queued>running leaving', 'running>queued leaving']);
    const before = history.slice(0, -2).map((row) => row.step);
    const other = before[0]?.split(' ')[1];
    expect([[], [`queued>running ${other}`, `running>queued ${other}`]]).toContainEqual(before);

    worker = await startCustomWorker(coordinator.url, { workflows: EXAMPLE_WORKFLOWS, workerId: 'staying' });
    const done = await finish(run, 20_000);
    expect(done).toMatchObject({ status: 'completed', output: { steps: 40 } });
    const claims = await db.sql<{ worker_id: string }>(`SELECT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running' ORDER BY id`, [
      run.id,
    ]);
    expect(claims.map((claim) => claim.worker_id).slice(-2)).toEqual(['leaving', 'staying']);
  });

  it('delays a run until runAt', async () => {
    const runAt = new Date(Date.now() + 700);
    const run = await client.start({ name: 'echo', version: '1' }, 'later', { runAt });
    const done = await finish(run);
    expect(done.status).toBe('completed');
    expect(Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(runAt.getTime());
  });
});
