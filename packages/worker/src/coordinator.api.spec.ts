import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { API, type ClaimedRun, type WorkerReport } from '@nest-durable/common';
import { answeredError, CoordinatorUnavailableError } from '@nest-durable/client';
import { defineWorkflow } from '@nest-durable/workflow';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../../../test/support/poll';
import { CoordinatorApi } from './coordinator.api';
import { CoordinatorPool } from './coordinator-pool';
import { RunExecutor } from './run-executor';
import { RunLease } from '@app/locking';
import { WorkflowRegistry } from './workflow.registry';
import { resolveWorkerOptions } from './worker.options';

/** A stand-in coordinator's report endpoint: keeps each request's reports, accepts them all. */
class ReportSink {
  readonly requests: WorkerReport[][] = [];
  /** While set, answers wait for it (a record still on its way). */
  held: Promise<void> | undefined;
  /** Task keys answered with a 409, as a coordinator answers a stale report. */
  readonly stale = new Set<string>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', async () => {
        const { reports } = JSON.parse(body) as { reports: WorkerReport[] };
        this.requests.push(reports);
        await this.held;
        const outcomes = reports.map((report) =>
          report.type === 'task' && this.stale.has(report.task.key)
            ? { ok: false, statusCode: 409, reason: 'revision_conflict', message: 'stale' }
            : report.type === 'task'
              ? {
                  ok: true,
                  result: {
                    key: report.task.key,
                    kind: 'task',
                    seq: report.task.seq,
                    status: report.task.status,
                    attempts: 1,
                    output: report.task.output,
                    error: null,
                  },
                }
              : { ok: true, result: { revision: 4 } },
        );
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ outcomes }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Each request as the types and keys of its reports. */
  get sent(): string[][] {
    return this.requests.map((reports) => reports.map((report) => (report.type === 'task' ? `task ${report.task.key}` : report.type)));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

const steps: string[] = [];
const twoSteps = defineWorkflow<Record<string, never>, number>({
  name: 'two-steps',
  version: '1',
  handler: async (ctx) => {
    const first = await ctx.task('first', () => {
      steps.push('first');
      return 1;
    });
    const second = await ctx.task('second', () => {
      steps.push('second');
      return 2;
    });
    return first + second;
  },
});

/** Returns a result after its last task, once a timer fired: its outcome is made while that task's record is in flight. */
const slowToReturn = defineWorkflow<Record<string, never>, number>({
  name: 'slow-to-return',
  version: '1',
  handler: async (ctx) => {
    const value = await ctx.task('only', () => 1);
    await new Promise((resolve) => setTimeout(resolve, 1));
    return value;
  },
});
/** Its task's output cannot be stored (a NUL), which the worker knows before sending it. */
const unstorable = defineWorkflow<Record<string, never>, number>({
  name: 'unstorable',
  version: '1',
  handler: async (ctx) => (await ctx.task('nul', () => 'a\u0000b')).length,
});
const keyOrder = defineWorkflow<Record<string, never>, string>({
  name: 'key-order',
  version: '1',
  handler: async (ctx) => Object.keys(await ctx.task('object', () => ({ bb: 1, b: 2, a: 3, é: 4, 10: 5 }))).join(','),
});

const run: ClaimedRun = {
  id: '01a23292-e466-76ce-9ad8-c86c6dd448fb',
  workflow: 'two-steps',
  version: '1',
  queue: 'two-steps:1',
  revision: 3,
  attempt: 1,
  input: {},
  tasks: [],
};

describe('CoordinatorApi report batching, as the executor uses it', () => {
  const sink = new ReportSink();
  let executor: RunExecutor;

  beforeEach(async () => {
    steps.length = 0;
    sink.requests.length = 0;
    sink.held = undefined;
    sink.stale.clear();
    const options = resolveWorkerOptions({ workflows: [twoSteps, slowToReturn, unstorable, keyOrder], coordinatorUrl: await sink.start() });
    executor = new RunExecutor(new CoordinatorApi(options), new WorkflowRegistry(options), options);
  });

  afterEach(() => sink.stop());

  it("sends a handler's last task result and the run's outcome in one request", async () => {
    await executor.execute(run, new RunLease(run.id, 3));
    expect(sink.sent).toEqual([['task first#1'], ['task second#1', 'complete']]);
  });

  it('starts the next step only once the previous task result is recorded', async () => {
    let release!: () => void;
    sink.held = new Promise((resolve) => (release = resolve));
    const execution = executor.execute(run, new RunLease(run.id, 3));
    // Poll until the first record reached the coordinator: the second step must not have begun meanwhile.
    const deadline = Date.now() + 5_000;
    while (sink.requests.length === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(sink.sent).toEqual([['task first#1']]);
    expect(steps).toEqual(['first']);
    sink.held = undefined;
    release();
    await execution;
    expect(steps).toEqual(['first', 'second']);
    expect(sink.sent).toEqual([['task first#1'], ['task second#1', 'complete']]);
  });

  it("does not send a run's outcome once the record of a task before it was refused", async () => {
    sink.stale.add('only#1');
    let release!: () => void;
    sink.held = new Promise((resolve) => (release = resolve));
    const lease = new RunLease(run.id, 3);
    const execution = executor.execute({ ...run, workflow: 'slow-to-return' }, lease);
    const deadline = Date.now() + 5_000;
    while (sink.requests.length === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    // The handler returns while the record waits for its answer: its completion waits behind it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    sink.held = undefined;
    release();
    await execution;
    expect(sink.sent).toEqual([['task only#1']]);
    expect(lease.isLost).toBe(true);
  });

  it('a task result the coordinator would refuse fails the run at its task, as it always did, and is not sent', async () => {
    await executor.execute({ ...run, workflow: 'unstorable' }, new RunLease(run.id, 3));
    expect(sink.sent).toEqual([['fail']]);
    const [[failure]] = sink.requests;
    expect(failure).toMatchObject({ type: 'fail', fail: { error: { message: expect.stringContaining('NUL') } } });
  });

  it('the handler goes on with a task result in the key order a replay reads it back in (jsonb order)', async () => {
    await executor.execute({ ...run, workflow: 'key-order' }, new RunLease(run.id, 3));
    const complete = sink.requests.flat().find((report) => report.type === 'complete');
    expect(complete).toMatchObject({ complete: { output: '10,a,b,bb,é' } });
  });
});

describe('CoordinatorApi: a claim or offer made as a run ends goes out after its report', () => {
  /** The requests the worker sent, in the order it sent them; a report's answer waits for `reportsAnswer`. */
  function recording(reportsAnswer: Promise<void> = Promise.resolve()) {
    const sent: string[] = [];
    jest.spyOn(CoordinatorPool.prototype as unknown as { attempt: () => Promise<unknown> }, 'attempt').mockImplementation((async (
      _member: unknown,
      method: string,
      path: string,
    ) => {
      sent.push(`${method} ${path}`);
      if (path !== API.report.path) return { runs: [] };
      await reportsAnswer;
      return { outcomes: [{ ok: true, result: { revision: 4 } }] };
    }) as never);
    const api = new CoordinatorApi(resolveWorkerOptions({ workflows: [twoSteps], coordinatorUrl: 'http://127.0.0.1:9' }));
    return { api, sent };
  }

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('the report a handler makes in the turn the runtime asks for more work goes first: it moves a run on, the claim only waits', async () => {
    const { api, sent } = recording();
    // As the runtime does: a run it took starts, and it asks for more at once; the run's handler reports within that turn.
    const claimed = api.claim([], 2, 0);
    const offer = api.offer([], 0);
    const completed = Promise.resolve().then(() => api.complete(run.id, { expectedRevision: 3, output: 1 }));
    await Promise.all([claimed, offer.answer, completed]);
    expect(sent).toEqual([`POST ${API.report.path}`, `POST ${API.claimRuns.path}`, `POST ${API.offerRuns.path}`]);
  });

  it("waits for no report's answer, and with no report queued a claim goes out at once", async () => {
    let answer!: () => void;
    const { api, sent } = recording(new Promise((resolve) => (answer = resolve)));
    const completed = api.complete(run.id, { expectedRevision: 3, output: 1 });
    try {
      await api.claim([], 2, 0);
      expect(sent).toEqual([`POST ${API.report.path}`, `POST ${API.claimRuns.path}`]);
      // The report is still unanswered: a claim now has nothing queued before it.
      await api.claim([], 2, 0);
      expect(sent).toHaveLength(3);
    } finally {
      answer();
      await completed;
    }
  });
});

describe('CoordinatorApi: a write while no coordinator can serve it', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  /** A CoordinatorApi whose every request fails with what `fail` returns for its attempt (undefined: it lands). */
  function failing(fail: (attempt: number) => Error | undefined) {
    const state = { attempts: 0 };
    jest.spyOn(CoordinatorPool.prototype as unknown as { attempt: () => Promise<unknown> }, 'attempt').mockImplementation((async () => {
      const error = fail(++state.attempts);
      if (error) throw error;
      return { outcomes: [{ ok: true, result: { revision: 4 } }] };
    }) as never);
    const api = new CoordinatorApi(resolveWorkerOptions({ workflows: [twoSteps], coordinatorUrl: 'http://127.0.0.1:9' }));
    return { api, state };
  }
  const unreachable = () => new CoordinatorUnavailableError('POST /v1/worker/reports: ECONNREFUSED');

  it('is sent again for as long as that lasts (the run stays held), and given up once the worker shuts down', async () => {
    const { api, state } = failing(unreachable);
    let settled = false;
    const completed = api.complete(run.id, { expectedRevision: 3, output: 1 });
    void completed.catch(() => undefined).finally(() => (settled = true));
    // Past the six attempts (about three seconds) after which it used to give the write, and so the run, up.
    await eventually('the write to be sent eight times', async () => state.attempts >= 8, 15_000);
    expect(settled).toBe(false);
    // It waits between two tries now: shut down, it gives up without another.
    const sent = state.attempts;
    api.onApplicationShutdown();
    await expect(completed).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    expect(state.attempts).toBe(sent);
  }, 20_000);

  it('lands once a coordinator can serve it again (503: its database was down)', async () => {
    const { api, state } = failing((attempt) => (attempt <= 7 ? answeredError(503, 'database_unavailable', 'the database is unavailable') : undefined));
    await api.complete(run.id, { expectedRevision: 3, output: 1 });
    expect(state.attempts).toBe(8);
  }, 20_000);

  it.each([
    ['a write answered 500 (a fault of the coordinator that sending again may not mend)', () => answeredError(500, 'internal_error', 'boom'), 'complete'],
    ['a dead letter (it stays pending, for a later recovery to hand over)', unreachable, 'dead letter'],
  ])(
    'gives up after six tries: %s',
    async (_case, fail, write) => {
      const { api, state } = failing(fail);
      const sent =
        write === 'complete'
          ? api.complete(run.id, { expectedRevision: 3, output: 1 })
          : api.reportDeadLetter({ workflow: { name: 'two-steps', version: '1' }, wakeup: 'p0/1-0', deliveries: 6 });
      await expect(sent).rejects.toThrow();
      expect(state.attempts).toBe(6);
    },
    20_000,
  );
});
