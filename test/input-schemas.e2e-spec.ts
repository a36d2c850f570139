import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { InvalidRequestError, type StartedRunView, WorkflowClient } from '@nest-durable/client';
import { Workflow } from '@nest-durable/worker';
import { defineWorkflow, type WorkflowContext } from '@nest-durable/workflow';
import { Module } from '@nestjs/common';
import { type Static, Type } from '@sinclair/typebox';
import request from 'supertest';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { TEST_REDIS_URL, testPrefix } from './support/redis';
import { snapshotTables } from './support/snapshot';
import { buildClientPackage, stopAllWf, wf } from './support/wf-process';

const Signup = Type.Object({ email: Type.String(), plan: Type.Union([Type.Literal('free'), Type.Literal('pro')]) });

/** A class declaring its input schema with TypeBox. */
@Workflow({ name: 'schema-signup', version: '1', inputSchema: Signup })
class SignupWorkflow {
  async run(_ctx: WorkflowContext, input: Static<typeof Signup>): Promise<string> {
    return `welcome ${input.email} (${input.plan})`;
  }
}

@Module({ providers: [SignupWorkflow] })
class SignupModule {}

/** A definition declaring a plain JSON Schema. */
const invoice = defineWorkflow<{ amount: number }, number>({
  name: 'schema-invoice',
  version: '1',
  inputSchema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number', minimum: 0 } } },
  handler: async (_ctx, input) => input.amount,
});

/** Inputs checked at start against the schemas workers register; a start of a version no worker registered warns. */
describe('input schemas', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase('input_schemas'), buildClientPackage()]);
    // With a publisher, so that a start would write its outbox row too.
    coordinator = await startCoordinator(db.url, { dispatch: 'redis-zset', redisUrl: TEST_REDIS_URL, redisPrefix: testPrefix('input-schemas') });
    worker = await startCustomWorker(coordinator.url, { workflows: [invoice], registrationIntervalMs: 200 }, [SignupModule]);
    client = new WorkflowClient({ url: coordinator.url });
    // Registered: both versions' schemas recorded.
    await eventually('the schemas registered', async () => {
      const [{ n }] = await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM workflows WHERE input_schema IS NOT NULL`);
      return n === 2;
    });
  }, 60_000);

  afterEach(async () => {
    await stopAllWf();
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  /** Every table but the registry's, which the worker's registrations rewrite meanwhile. */
  const tables = async () => {
    const { workers: _workers, workflows: _workflows, ...rest } = await snapshotTables(db);
    return rest;
  };
  const counts = async () =>
    (await db.sql<{ runs: number; outbox: number }>(`SELECT (SELECT count(*)::int FROM runs) AS runs, (SELECT count(*)::int FROM outbox) AS outbox`))[0];

  it('refuses a start whose input does not match the registered schema, 400 invalid_input with the path, creating nothing', async () => {
    const before = { counts: await counts(), tables: await tables() };
    const refused = await http()
      .post('/v1/runs')
      .send({ workflow: 'schema-signup', version: '1', input: { email: 42, plan: 'free' } })
      .expect(400);
    expect(refused.body).toMatchObject({ reason: 'invalid_input', message: 'input/email: Expected string' });
    const plain = await http()
      .post('/v1/runs')
      .send({ workflow: 'schema-invoice', version: '1', input: { amount: -1 } })
      .expect(400);
    expect(plain.body).toMatchObject({ reason: 'invalid_input', message: 'input/amount: Expected number to be greater or equal to 0' });
    // No input at all is null: refused by a schema of an object.
    await expect(client.start({ name: 'schema-signup', version: '1' })).rejects.toMatchObject({
      constructor: InvalidRequestError,
      reason: 'invalid_input',
      message: 'input: Expected object',
    });
    expect(await counts()).toEqual(before.counts);
    expect(await tables()).toEqual(before.tables);
  });

  it('runs a start whose input matches, without a warning', async () => {
    const started = await client.start(SignupWorkflow, { email: 'ada@example.com', plan: 'pro' });
    expect(started.warning).toBeUndefined();
    expect(await started.result({ timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: 'welcome ada@example.com (pro)' });
    const run = await client.start(invoice, { amount: 12.5 });
    expect(await run.result({ timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: 12.5 });
  });

  it('refuses a whole batch over one input that does not match, naming it, and starts none of it', async () => {
    const before = { counts: await counts(), tables: await tables() };
    const refused = await http()
      .post('/v1/runs/batch')
      .send({
        runs: [
          { workflow: 'schema-invoice', version: '1', input: { amount: 1 } },
          { workflow: 'schema-signup', version: '1', input: { email: 'a@b.c', plan: 'gold' } },
        ],
      })
      .expect(400);
    expect(refused.body).toMatchObject({ reason: 'invalid_input', message: 'runs[1].input/plan: Expected one of "free", "pro"' });
    expect(await counts()).toEqual(before.counts);
    expect(await tables()).toEqual(before.tables);
  });

  it('refuses a schedule created with an input that does not match, storing nothing', async () => {
    const refused = await http()
      .post('/v1/schedules')
      .send({ workflow: 'schema-invoice', version: '1', intervalMs: 60_000, input: { amount: 'ten' } })
      .expect(400);
    expect(refused.body).toMatchObject({ reason: 'invalid_input', message: 'input/amount: Expected number' });
    expect(await db.sql(`SELECT id FROM schedules`)).toEqual([]);
  });

  it('starts a run of a version no worker registered, with a warning the client and wf show', async () => {
    const answered = await http().post('/v1/runs').send({ workflow: 'schema-signpu', version: '1', input: {} }).expect(201);
    expect((answered.body as StartedRunView).warning).toEqual({
      reason: 'unregistered_workflow_version',
      message: expect.stringContaining('no worker has registered schema-signpu 1'),
    });
    const [batch] = (
      await http()
        .post('/v1/runs/batch')
        .send({ runs: [{ workflow: 'schema-invoice', version: '2' }] })
        .expect(201)
    ).body.runs as StartedRunView[];
    expect(batch.warning?.reason).toBe('unregistered_workflow_version');

    const started = await client.start({ name: 'schema-invoice', version: '9' }, { amount: 'anything' });
    expect(started).toMatchObject({ status: 'queued', warning: { reason: 'unregistered_workflow_version' } });

    const result = await wf(['runs', 'start', 'schema-invoce', '1', '--input', '{"amount":1}'], { WF_URL: coordinator.url });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^run [0-9a-f-]{36} \(schema-invoce 1\) queued$/m);
    expect(result.stderr).toBe(
      'warning (unregistered_workflow_version): no worker has registered schema-invoce 1: the run waits until a worker that hosts it comes (is the name or the version misspelled?)\n',
    );
    // A registered version: nothing on stderr.
    const quiet = await wf(['runs', 'start', 'schema-invoice', '1', '--input', '{"amount":1}'], { WF_URL: coordinator.url });
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    // With --json too, the warning goes to stderr: stdout is the run alone.
    const json = await wf(['--json', 'runs', 'start', 'schema-invoce', '1'], { WF_URL: coordinator.url });
    expect(JSON.parse(json.stdout)).toMatchObject({ workflow: 'schema-invoce', warning: { reason: 'unregistered_workflow_version' } });
    expect(json.stderr).toContain('warning (unregistered_workflow_version)');
  });
});
