import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowClient } from '@nest-durable/client';
import { createTestDatabase, type TestDatabase } from './support/database';
import { SIDE_EFFECTS_TABLE } from './fixtures/side-effects.workflow';
import { eventually } from './support/poll';
import { AppProcess, freePort, stopAllProcesses } from './support/processes';

/**
 * Fault tolerance with real processes and real signals: a coordinator process and worker
 * processes against real PostgreSQL, with short heartbeat and idle timeouts so recovery takes
 * seconds.
 */
describe('fault tolerance (real processes)', () => {
  const HEARTBEAT_INTERVAL_MS = '300';
  const CLAIM_MIN_IDLE_TIME_MS = '1500';
  let db: TestDatabase;
  let coordinatorUrl: string;
  let coordinatorEnv: Record<string, string>;
  let coordinator: AppProcess;
  let client: WorkflowClient;
  const workers: AppProcess[] = [];

  const startCoordinator = async () => {
    coordinator = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', coordinatorEnv);
    await coordinator.waitForOutput('listening on');
    return coordinator;
  };

  const startWorker = async (workerId: string) => {
    const worker = new AppProcess(workerId, 'test/fixtures/fault-worker.main.ts', {
      COORDINATOR_URL: coordinatorUrl,
      WORKER_ID: workerId,
      HEARTBEAT_INTERVAL_MS,
      CLAIM_WAIT_MS: '2000',
      SHUTDOWN_GRACE_MS: '1000',
      SIDE_EFFECTS_URL: db.url,
    });
    workers.push(worker);
    await worker.waitForOutput(`ready ${workerId}`);
    return worker;
  };

  const sideEffects = (runId: string) =>
    db.sql<{ step: number; worker_id: string }>('SELECT step, worker_id FROM side_effects WHERE run_id = $1 ORDER BY id', [runId]);
  const recordedSteps = async (runId: string) =>
    Number((await db.sql<{ count: string }>(`SELECT count(*) FROM tasks WHERE run_id = $1 AND kind = 'task'`, [runId]))[0].count);
  const runRow = async (runId: string) =>
    (await db.sql<{ status: string; revision: number; claimed_by: string }>('SELECT status, revision, claimed_by FROM runs WHERE id = $1', [runId]))[0];

  beforeAll(async () => {
    db = await createTestDatabase('faults');
    await db.sql(SIDE_EFFECTS_TABLE);
    const port = await freePort();
    coordinatorUrl = `http://127.0.0.1:${port}`;
    coordinatorEnv = {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_DISABLED: 'true',
      HEARTBEAT_INTERVAL_MS,
      CLAIM_MIN_IDLE_TIME_MS,
      CLAIM_POLL_INTERVAL_MS: '200',
    };
    await startCoordinator();
    client = new WorkflowClient({ url: coordinatorUrl });
  }, 60_000);

  afterAll(async () => {
    await stopAllProcesses();
    await db?.drop();
  });

  it('kill -9 mid-run: another worker finishes it from its last checkpoint', async () => {
    const first = await startWorker('w-killed');
    const run = await client.start({ name: 'side-effects', version: '1' }, { steps: 6, stepMs: 250 });
    await eventually('two recorded steps', async () => (await recordedSteps(run.id)) >= 2);

    first.signal('SIGKILL');
    await first.exited;
    const recordedBeforeKill = await recordedSteps(run.id);

    await startWorker('w-rescuer');
    const done = await client.waitForResult(run.id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'completed', output: { steps: 6 } });
    expect(done.tasks?.map((task) => task.output)).toEqual([1, 2, 3, 4, 5, 6]);

    const effects = await sideEffects(run.id);
    for (let step = 1; step <= 6; step++) {
      const runsOfStep = effects.filter((effect) => effect.step === step);
      // Recorded before the kill: never executed again. The step in flight may run twice (at least once).
      if (step <= recordedBeforeKill) expect(runsOfStep.map((e) => e.worker_id)).toEqual(['w-killed']);
      else expect(runsOfStep.at(-1)?.worker_id).toBe('w-rescuer');
    }
    const claims = await db.sql<{ worker_id: string }>(`SELECT worker_id FROM run_transitions WHERE run_id = $1 AND to_status = 'running' ORDER BY id`, [
      run.id,
    ]);
    expect(claims.map((claim) => claim.worker_id)).toEqual(['w-killed', 'w-rescuer']);
  }, 60_000);

  it('SIGSTOP past the idle timeout: the stopped worker is fenced off when it resumes', async () => {
    await stopAllWorkers();
    const zombie = await startWorker('w-zombie');
    const run = await client.start({ name: 'side-effects', version: '1' }, { steps: 4, stepMs: 400 });
    await eventually('a recorded step', async () => (await recordedSteps(run.id)) >= 1);
    zombie.signal('SIGSTOP');

    await startWorker('w-successor');
    const done = await client.waitForResult(run.id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'completed', output: { steps: 4 } });
    const finished = await runRow(run.id);
    expect(finished.claimed_by).toBe('w-successor');

    zombie.signal('SIGCONT');
    await zombie.waitForOutput('is no longer ours');
    expect(await runRow(run.id)).toEqual(finished);
    expect(await recordedSteps(run.id)).toBe(4);
    const transitions = await db.sql<{ count: string }>(`SELECT count(*) FROM run_transitions WHERE run_id = $1 AND to_status = 'completed'`, [run.id]);
    expect(transitions[0].count).toBe('1');
  }, 60_000);

  it('heartbeats keep a task that runs longer than the idle timeout from being stolen', async () => {
    await stopAllWorkers();
    await startWorker('w-slow-1');
    await startWorker('w-slow-2');
    const run = await client.start({ name: 'side-effects', version: '1' }, { steps: 1, stepMs: 4_000 });
    const done = await client.waitForResult(run.id, { timeoutMs: 30_000 });
    expect(done.status).toBe('completed');
    expect(await sideEffects(run.id)).toHaveLength(1);
    const claims = await db.sql(`SELECT 1 FROM run_transitions WHERE run_id = $1 AND to_status = 'running'`, [run.id]);
    expect(claims).toHaveLength(1);
  }, 60_000);

  it('a sleeping run survives a restart of the coordinator and every worker, and wakes on time', async () => {
    await stopAllWorkers();
    await startWorker('w-before-restart');
    const run = await client.start({ name: 'sleepy', version: '1' }, { ms: 4_000 });
    await eventually('the run to sleep', async () => (await runRow(run.id)).status === 'waiting');

    await stopAllWorkers();
    await coordinator.stop();
    await startCoordinator();
    await startWorker('w-after-restart');

    const done = await client.waitForResult(run.id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'completed', output: { sleptMs: 4_000 } });
    expect(Date.parse(done.finishedAt!) - Date.parse(done.createdAt)).toBeGreaterThanOrEqual(4_000);
    const [sleep] = done.tasks!.filter((task) => task.kind === 'sleep');
    expect(sleep).toMatchObject({ key: 'sleep:nap#1', status: 'completed' });
  }, 90_000);

  async function stopAllWorkers(): Promise<void> {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  }
});
