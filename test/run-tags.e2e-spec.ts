import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, TAGS_MAX, WorkflowClient } from '@nest-durable/client';
import request from 'supertest';
import { defineWorkflow } from '@nest-durable/workflow';
import { echoWorkflow } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startCustomWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { snapshotTables } from './support/snapshot';
import { buildClientPackage, stopAllWf, wf } from './support/wf-process';
import { RUN_TABLES } from '@app/persistence';

/** Run tags: started with, shown, inherited by child runs, filtered on in the run list; real PostgreSQL. */
describe('run tags', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let client: WorkflowClient;

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase('run_tags'), buildClientPackage()]);
    coordinator = await startCoordinator(db.url);
    client = new WorkflowClient({ url: coordinator.url });
  }, 60_000);

  afterEach(async () => {
    await stopAllWf();
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')} CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  const start = (body: object) =>
    http()
      .post('/v1/runs')
      .send({ workflow: 'echo', version: '1', ...body });
  const listIds = async (query: string) => {
    const response = await http().get(`/v1/runs?${query}`).expect(200);
    return (response.body.runs as RunView[]).map((run) => run.id);
  };

  it('starts runs with tags, one at a time and in a batch, and shows them (untagged runs show {})', async () => {
    const tags = { tenant: 'acme', 'app.example.com/team': 'billing', note: 'a: b, c', empty: '' };
    const one = await start({ tags }).expect(201);
    expect(one.body.tags).toEqual(tags);
    expect((await http().get(`/v1/runs/${one.body.id}`).expect(200)).body.tags).toEqual(tags);

    const batch = await http()
      .post('/v1/runs/batch')
      .send({
        runs: [
          { workflow: 'echo', version: '1', tags: { tenant: 'globex' } },
          { workflow: 'echo', version: '1' },
        ],
      })
      .expect(201);
    expect(batch.body.runs.map((run: RunView) => run.tags)).toEqual([{ tenant: 'globex' }, {}]);
  });

  it.each([
    ['not an object', 'invalid_tags', ['a']],
    ['too many', 'invalid_tags', Object.fromEntries(Array.from({ length: TAGS_MAX + 1 }, (_, i) => [`k${i}`, 'v']))],
    ['a key with a colon', 'invalid_tag_key', { 'a:b': 'v' }],
    ['a key too long', 'invalid_tag_key', { ['k'.repeat(65)]: 'v' }],
    ['a key starting with _', 'invalid_tag_key', { __proto__x: 'v' }],
    ['a value that is not text', 'invalid_tag_value', { tenant: 5 }],
    ['a value too long', 'invalid_tag_value', { tenant: 'v'.repeat(256) }],
    ['a value with a control character', 'invalid_tag_value', { tenant: 'a\nb' }],
  ])('refuses tags that are %s with 400 %s, and writes nothing', async (_what, reason, tags) => {
    const before = await snapshotTables(db);
    const single = await start({ tags }).expect(400);
    expect(single.body).toMatchObject({ statusCode: 400, reason });
    expect(single.body.message).toMatch(/^tags/);
    const batch = await http()
      .post('/v1/runs/batch')
      .send({
        runs: [
          { workflow: 'echo', version: '1' },
          { workflow: 'echo', version: '1', tags },
        ],
      })
      .expect(400);
    expect(batch.body.reason).toBe(reason);
    expect(await snapshotTables(db)).toEqual(before);
  });

  it('lists the runs that have every tag asked for, newest first, page by page', async () => {
    const acmeProd = await client.startMany(
      Array.from({ length: 3 }, () => ({ workflow: { name: 'echo', version: '1' }, tags: { tenant: 'acme', env: 'prod' } })),
    );
    const acmeDev = await client.start({ name: 'echo', version: '1' }, null, { tags: { tenant: 'acme', env: 'dev' } });
    await client.start({ name: 'echo', version: '1' }, null, { tags: { tenant: 'globex', env: 'prod' } });
    await client.start({ name: 'echo', version: '1' });
    // Ids are UUIDv7: time-ordered, random within a millisecond, and the list is by id.
    const newestFirst = (runs: RunView[]) =>
      runs
        .map((run) => run.id)
        .sort()
        .reverse();

    expect(await listIds('tag=tenant:acme')).toEqual([acmeDev.id, ...newestFirst(acmeProd)]);
    expect(await listIds('tag=tenant:acme&tag=env:prod')).toEqual(newestFirst(acmeProd));
    expect(await listIds('tag=tenant:acme&tag=env:prod&tag=tenant:globex')).toEqual([]);
    expect(await listIds('tag=tenant:initech')).toEqual([]);
    expect(await listIds('tag=env:prod&workflow=chain')).toEqual([]);

    const first = await client.list({ tags: { tenant: 'acme', env: 'prod' }, limit: 2 });
    const second = await client.list({ tags: { tenant: 'acme', env: 'prod' }, limit: 2, cursor: first.nextCursor! });
    expect([...first.runs, ...second.runs].map((run) => run.id)).toEqual(newestFirst(acmeProd));
    expect(second.nextCursor).toBeNull();
  });

  it('matches a value containing colons, and refuses a filter that is not key:value with 400 invalid_tag', async () => {
    const run = await client.start({ name: 'echo', version: '1' }, null, { tags: { url: 'https://example.com:8443' } });
    expect(await listIds(`tag=${encodeURIComponent('url:https://example.com:8443')}`)).toEqual([run.id]);
    for (const filter of ['tenant', ':acme', 'a b:c', 'k:a%0Ab']) {
      const response = await http().get(`/v1/runs?tag=${filter}`).expect(400);
      expect(response.body).toMatchObject({ reason: 'invalid_tag', message: expect.stringMatching(/^tag must be/) });
    }
    const tooMany = Array.from({ length: TAGS_MAX + 1 }, (_, i) => `tag=k${i}:v`).join('&');
    expect((await http().get(`/v1/runs?${tooMany}`).expect(400)).body.reason).toBe('invalid_tag');
  });

  it('wf runs start --tag k=v tags the run, and wf runs list --tag k:v finds it', async () => {
    const env = { WF_URL: coordinator.url };
    const started = await wf(['--json', 'runs', 'start', 'echo', '1', '--tag', 'tenant=acme', '--tag', 'note=x=y'], env);
    // No worker in this suite: the start warns (on stderr) that none registered echo 1, and stdout is the run alone.
    expect(started).toMatchObject({ code: 0, stderr: expect.stringMatching(/^warning \(unregistered_workflow_version\): [^\n]*\n$/) });
    const run = JSON.parse(started.stdout) as RunView;
    expect(run.tags).toEqual({ tenant: 'acme', note: 'x=y' });
    await client.start({ name: 'echo', version: '1' }, null, { tags: { tenant: 'acme', note: 'other' } });

    const listed = await wf(['--json', 'runs', 'list', '--tag', 'tenant:acme', '--tag', 'note:x=y'], env);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect((JSON.parse(listed.stdout) as { runs: RunView[] }).runs.map((r) => r.id)).toEqual([run.id]);

    const shown = await wf(['runs', 'get', run.id], env);
    expect(shown.stdout).toMatch(/^tags\s+note=x=y tenant=acme$/m);

    const refused = await wf(['runs', 'list', '--tag', 'tenant'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('key:value');
  });

  describe('child runs', () => {
    let worker: RunningWorker;
    /** Starts an echo child with the tags its input names (or, given none, with its own). */
    const tagging = defineWorkflow<{ tags?: Record<string, string> }, string>({
      name: 'tagging',
      version: '1',
      handler: (ctx, input) => ctx.startChild('child', echoWorkflow, 'hi', input.tags ? { tags: input.tags } : {}),
    });

    beforeAll(async () => {
      worker = await startCustomWorker(coordinator.url, { workflows: [tagging, echoWorkflow] });
    });

    afterAll(async () => {
      await worker?.close();
    });

    const childOf = async (input: { tags?: Record<string, string> }, tags: Record<string, string>) => {
      const parent = await client.start(tagging, input, { tags });
      const done = await client.waitForResult(parent.id, { timeoutMs: 20_000 });
      expect(done.status).toBe('completed');
      return client.get(done.output as string);
    };

    it("get their parent's tags, or the tags the step names", async () => {
      expect(await childOf({}, { tenant: 'acme' })).toMatchObject({ workflow: 'echo', tags: { tenant: 'acme' } });
      expect(await childOf({ tags: { kind: 'audit' } }, { tenant: 'acme' })).toMatchObject({ workflow: 'echo', tags: { kind: 'audit' } });
    });
  });
});
