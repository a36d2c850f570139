import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunPage, type RunView, WorkflowClient } from '@nest-durable/client';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvalWorkflow, chainWorkflow, echoWorkflow, flakyWorkflow, sleepyWorkflow } from '../apps/worker/src/workflows';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { startDeadLetteringCoordinator } from './support/dead-letters';
import { eventually } from './support/poll';
import { freePort } from './support/processes';
import { buildClientPackage, stopAllWf, wf, WfProcess } from './support/wf-process';

const UNKNOWN_RUN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const LATER = () => new Date(Date.now() + 3_600_000);

/** The `wf` command line, built as users get it, against a real coordinator and worker. */
describe('wf (the command line)', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;
  let env: Record<string, string>;
  let files: string;

  beforeAll(async () => {
    [db, files] = await Promise.all([createTestDatabase('cli'), mkdtemp(join(tmpdir(), 'wf-cli-')), buildClientPackage()]);
    coordinator = await startCoordinator(db.url);
    worker = await startWorker(coordinator.url);
    client = new WorkflowClient({ url: coordinator.url });
    env = { WF_URL: coordinator.url };
  }, 60_000);

  afterEach(async () => {
    await stopAllWf();
  });

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
    if (files) await rm(files, { recursive: true, force: true });
  });

  describe('runs start', () => {
    it('starts a run and waits for it through the bin npm links (npx wf), printing the run and its steps', async () => {
      const result = await new WfProcess(['runs', 'start', 'order-processing', '1.0.0', '--input', '{"orderId":"o-7"}', '--wait'], env, 'bin').exited;
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^run\s+[0-9a-f-]{36}$/m);
      expect(result.stdout).toMatch(/^status\s+completed$/m);
      expect(result.stdout).toContain('"status":"shipped"');
      expect(result.stdout).toMatch(/^reserve-inventory#1\s+task\s+completed\s+1\s/m);
      expect(result.stdout).toMatch(/^ship-order#1\s+task\s+completed\s+1\s/m);
    });

    it('exits 1 when the run it waits for fails, with only the run as JSON on stdout', async () => {
      const result = await wf(['--json', 'runs', 'start', 'flaky', '1', '--input', '{"failTimes":100}', '--wait'], env);
      expect(result).toMatchObject({ code: 1, stderr: '' });
      const run = JSON.parse(result.stdout) as RunView;
      expect(run).toMatchObject({ workflow: 'flaky', status: 'failed', error: { message: 'attempt 5 failed on purpose' } });
    });

    it('makes the run join the trace of --traceparent, and refuses a malformed one without sending it', async () => {
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      // A run that sleeps on: an echo run would complete and be counted by the listing below.
      const started = await wf(['--json', 'runs', 'start', 'sleepy', '1', '--input', '{"ms":600000}', '--traceparent', traceparent], env);
      expect(started).toMatchObject({ code: 0, stderr: '' });
      // This coordinator traces nothing itself: its start keeps the caller's context for the run's worker.
      const { id } = JSON.parse(started.stdout) as RunView;
      expect(await db.sql('SELECT traceparent FROM runs WHERE id = $1', [id])).toEqual([{ traceparent }]);
      const refused = await wf(['runs', 'start', 'sleepy', '1', '--traceparent', '00-nope-01'], env);
      expect(refused).toMatchObject({ code: 1, stdout: '' });
      expect(refused.stderr).toMatch(/^wf: invalid_traceparent: /);
    });

    it('passes its options, reads the input from @file, and prints the run without waiting', async () => {
      const inputFile = join(files, 'input.json');
      await writeFile(inputFile, JSON.stringify({ ms: 5, note: 'from a file' }));
      const runAt = LATER();
      const args = [
        'runs',
        'start',
        'sleepy',
        '1',
        '--input',
        `@${inputFile}`,
        '--idempotency-key',
        'cli-options',
        '--priority',
        '7',
        '--shard',
        'eu',
        '--run-at',
        runAt.toISOString(),
      ];
      const result = await wf([...args, '--json'], env);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      const run = JSON.parse(result.stdout) as RunView;
      expect(run).toMatchObject({
        status: 'queued',
        input: { ms: 5, note: 'from a file' },
        idempotencyKey: 'cli-options',
        priority: 7,
        shard: 'eu',
        runAt: runAt.toISOString(),
      });
      // The same key again: the same run, printed for a human.
      const again = await wf(args, env);
      expect(again).toMatchObject({ code: 0, stdout: `run ${run.id} (sleepy 1) queued\n`, stderr: '' });
    });
  });

  describe('runs get and list', () => {
    let started: RunView[];
    let done: RunView;

    beforeAll(async () => {
      started = await client.startMany([1, 2, 3].map((n) => ({ workflow: echoWorkflow, input: { n }, idempotencyKey: `cli-list-${n}` })));
      await Promise.all(started.map((run) => client.waitForResult(run.id, { timeoutMs: 10_000 })));
      done = await client.get(started[2].id);
    });

    it('gets a run for a human and as JSON', async () => {
      const human = await wf(['runs', 'get', done.id], env);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      expect(human.stdout).toMatch(new RegExp(`^run\\s+${done.id}\\nworkflow\\s+echo 1\\nstatus\\s+completed\\n`));
      expect(human.stdout).toMatch(/^idempotency key\s+cli-list-3$/m);
      expect(human.stdout).toMatch(/^output\s+\{"n":3\}$/m);
      const json = await wf(['runs', 'get', done.id, '--json'], env);
      expect(JSON.parse(json.stdout)).toEqual(done);
    });

    it('lists runs filtered by workflow and status, a page at a time', async () => {
      const first = await wf(['runs', 'list', '--workflow', 'echo', '--status', 'completed', '--limit', '2', '--json'], env);
      expect(first).toMatchObject({ code: 0, stderr: '' });
      const page = JSON.parse(first.stdout) as { runs: RunView[]; nextCursor: string };
      expect(page.runs).toHaveLength(2);
      expect(page.nextCursor).toBe(page.runs[1].id);
      const human = await wf(['runs', 'list', '--workflow', 'echo', '--status', 'completed', '--limit', '2', '--cursor', page.nextCursor], env);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      const [header, ...rows] = human.stdout.trimEnd().split('\n');
      expect(header).toMatch(/^ID\s+WORKFLOW\s+VERSION\s+STATUS\s+ATTEMPT\s+CREATED$/);
      expect(rows.map((line) => line.split(/\s+/).slice(1, 5))).toEqual([['echo', '1', 'completed', '1']]);
      const listed = [...page.runs.map((run) => run.id), rows[0].split(/\s+/)[0]];
      expect(listed.sort()).toEqual(started.map((run) => run.id).sort());
      expect(await wf(['runs', 'list', '--workflow', 'nothing-here'], env)).toMatchObject({ code: 0, stdout: 'no runs\n' });
    });

    it('lists runs by version, idempotency key and creation time', async () => {
      const ids = async (...args: string[]) =>
        (JSON.parse((await wf(['runs', 'list', '--workflow', 'echo', ...args, '--json'], env)).stdout) as RunPage).runs.map((run) => run.id);
      expect(await ids('--key', 'cli-list-2')).toEqual([started[1].id]);
      expect(await ids('--workflow-version', '1', '--key', 'cli-list-2')).toEqual([started[1].id]);
      expect(await ids('--workflow-version', '2')).toEqual([]);
      // The creation millisecond a UUIDv7 starts with: the run is at or after it, not before.
      const [first] = started;
      const created = new Date(Number.parseInt(first.id.replace(/-/g, '').slice(0, 12), 16)).toISOString();
      expect(await ids('--until', created, '--key', 'cli-list-1')).toEqual([]);
      expect(await ids('--since', created, '--key', 'cli-list-1')).toEqual([first.id]);
    });
  });

  describe('runs watch', () => {
    it('prints each step as it is recorded and resolves, until the run ends', async () => {
      const run = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 });
      const watch = new WfProcess(['runs', 'watch', run.id], env);
      // The run is suspended on its event: watch shows that and keeps going.
      await watch.waitForStdout('event:approved#1 waiting');
      expect(watch.stdout).toMatch(new RegExp(`^run ${run.id} \\(approval 1\\) waiting$`, 'm'));
      await client.sendEvent(run.id, 'approved', { by: 'ada' });
      const result = await watch.exited;
      expect(result).toMatchObject({ code: 0, stderr: '' });
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines.at(-2)).toMatch(/event:approved#1 completed {2}\{"data":\{"by":"ada"\},"timedOut":false\}$/);
      expect(lines.at(-1)).toBe(`run ${run.id} (approval 1) completed  {"by":"ada"}`);
    });

    it('prints one JSON document per line with --json, and exits 1 when the run fails', async () => {
      const run = await client.start(chainWorkflow, { steps: 2 });
      await client.waitForResult(run.id, { timeoutMs: 10_000 });
      const ok = await wf(['runs', 'watch', run.id, '--json'], env);
      expect(ok).toMatchObject({ code: 0, stderr: '' });
      const events = ok.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; step?: { key: string }; run?: RunView });
      expect(events.map((event) => event.step?.key ?? event.run?.status)).toEqual(['step#1', 'step#2', 'completed']);
      const failed = await client.start(flakyWorkflow, { failTimes: 100 });
      const watchFailed = await wf(['runs', 'watch', failed.id], env);
      expect(watchFailed).toMatchObject({ code: 1, stderr: '' });
      expect(watchFailed.stdout).toContain('unreliable-call#1 failed after 5 attempts  Error: attempt 5 failed on purpose');
    });

    it('exits at once on Ctrl-C', async () => {
      const run = await client.start(sleepyWorkflow, { ms: 3_600_000 });
      const watch = new WfProcess(['runs', 'watch', run.id], env);
      await watch.waitForStdout('sleep:nap#1 waiting');
      watch.signal('SIGINT');
      expect(await watch.exited).toMatchObject({ code: 130, stderr: '' });
      await client.cancel(run.id);
    });
  });

  describe('runs watch follows the live feed', () => {
    const feedsOpen = async () => Number(/^wf_feeds_open (\S+)$/m.exec(await (await fetch(`${coordinator.url}/metrics`)).text())?.[1]);

    it('holds one feed open while the run waits, and closes it when the run ends', async () => {
      const run = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 });
      const watch = new WfProcess(['runs', 'watch', run.id], env);
      await watch.waitForStdout('event:approved#1 waiting');
      await eventually('the watch to follow the feed', async () => (await feedsOpen()) === 1);
      await client.sendEvent(run.id, 'approved', { by: 'grace' });
      expect(await watch.exited).toMatchObject({ code: 0, stderr: '' });
      expect(watch.stdout.trimEnd().split('\n').at(-1)).toBe(`run ${run.id} (approval 1) completed  {"by":"grace"}`);
      await eventually('the feed to close', async () => (await feedsOpen()) === 0);
    });

    it('polls a coordinator that has no feed', async () => {
      // A stand-in for an older coordinator: GET /v1/feed is not found, everything else is passed on.
      const older = createServer((request, response) => {
        if (request.url?.startsWith('/v1/feed')) {
          response.writeHead(404, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ statusCode: 404, error: 'Not Found', reason: 'not_found', message: 'Cannot GET /v1/feed' }));
          return;
        }
        void fetch(`${coordinator.url}${request.url}`).then(async (answer) => {
          response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          response.end(await answer.text());
        });
      });
      const port = await freePort();
      await new Promise<void>((resolve, reject) => older.once('error', reject).listen(port, '127.0.0.1', resolve));
      try {
        const run = await client.start(chainWorkflow, { steps: 2 });
        const result = await wf(['runs', 'watch', run.id], { WF_URL: `http://127.0.0.1:${port}` });
        expect(result).toMatchObject({ code: 0, stderr: '' });
        expect(result.stdout.trimEnd().split('\n').at(-1)).toBe(`run ${run.id} (chain 1) completed  {"steps":2}`);
      } finally {
        older.closeAllConnections();
        await new Promise((resolve) => older.close(resolve));
      }
    });
  });

  describe('runs history and stats', () => {
    it("prints a run's transitions, oldest first", async () => {
      const run = await client.start(echoWorkflow, 'history');
      await client.waitForResult(run.id, { timeoutMs: 10_000 });
      const human = await wf(['runs', 'history', run.id], env);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      const [header, ...rows] = human.stdout.trimEnd().split('\n');
      expect(header).toMatch(/^AT\s+FROM\s+TO\s+REVISION\s+WORKER$/);
      expect(rows.map((row) => row.split(/\s+/).slice(1, 4))).toEqual([
        ['-', 'queued', '0'],
        ['queued', 'running', '1'],
        ['running', 'completed', '2'],
      ]);
      const json = JSON.parse((await wf(['runs', 'history', run.id, '--json'], env)).stdout) as { items: { to: string }[]; truncated: boolean };
      expect(json).toMatchObject({ items: [{ to: 'queued' }, { to: 'running' }, { to: 'completed' }], truncated: false });
      const paged = await wf(['runs', 'history', run.id, '--limit', '2'], env);
      const cursor = /^more: --after (\d+)$/m.exec(paged.stdout)?.[1];
      expect({ rows: paged.stdout.trimEnd().split('\n').length, cursor }).toEqual({ rows: 4, cursor: expect.any(String) });
      const rest = await wf(['runs', 'history', run.id, '--limit', '2', '--after', cursor!], env);
      expect(
        rest.stdout
          .trimEnd()
          .split('\n')
          .slice(1)
          .map((row) => row.split(/\s+/)[2]),
      ).toEqual(['completed']);
      expect(await wf(['runs', 'history', UNKNOWN_RUN], env)).toMatchObject({ code: 1, stderr: `wf: run_not_found: run ${UNKNOWN_RUN} does not exist\n` });
    });

    it('prints the numbers of the last hour or day, each queue on a line', async () => {
      // No worker serves this shard: the run waits there, ready.
      await client.start(echoWorkflow, 'stats', { shard: 'cli-stats' });
      const human = await wf(['stats'], env);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      expect(human.stdout).toMatch(/^last 1h as of \S+: \d+ runs started, \d+ finished$/m);
      expect(human.stdout).toMatch(/^QUEUE\s+READY\s+DELAYED\s+RUNNING\s+WAITING\s+OLDEST READY\s+HOSTED$/m);
      expect(human.stdout).toMatch(/^echo:1:cli-stats\s+1\s+0\s+0\s+0\s+\d+(ms|s)\s+NO$/m);
      const json = JSON.parse((await wf(['stats', '--window', '24h', '--json'], env)).stdout) as { window: string; queues: { queue: string; ready: number }[] };
      expect(json.window).toBe('24h');
      expect(json.queues.find((queue) => queue.queue === 'echo:1:cli-stats')).toMatchObject({ ready: 1 });
      expect(await wf(['stats', '--window', '7d'], env)).toMatchObject({ code: 2, stderr: expect.stringMatching(/Allowed choices are 1h, 24h/) });
    });
  });

  describe('steering runs', () => {
    it('cancels a run, and says why it cannot cancel it twice', async () => {
      const run = await client.start(sleepyWorkflow, { ms: 1 }, { runAt: LATER() });
      expect(await wf(['runs', 'cancel', run.id], env)).toMatchObject({ code: 0, stdout: `run ${run.id} (sleepy 1) cancelled\n`, stderr: '' });
      expect(await wf(['runs', 'cancel', run.id, '--json'], env)).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `wf: run_terminal: run ${run.id} is already cancelled\n`,
      });
    });

    it('retries a failed run as its next attempt', async () => {
      const run = await client.start(flakyWorkflow, { failTimes: 100 });
      await client.waitForResult(run.id, { timeoutMs: 10_000 });
      const result = await wf(['runs', 'retry', run.id, '--json'], env);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(result.stdout)).toMatchObject({ id: run.id, attempt: 2 });
      expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'failed', attempt: 2 });
    });

    it('wakes a sleeping run', async () => {
      const run = await client.start(sleepyWorkflow, { ms: 3_600_000 });
      await eventually('the run asleep', async () => (await client.get(run.id)).status === 'waiting');
      expect(await wf(['runs', 'wake', run.id], env)).toMatchObject({ code: 0, stderr: '' });
      expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed' });
      expect(await wf(['runs', 'wake', run.id], env)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^wf: run_not_sleeping: /) });
    });

    it('sends an event with data given inline or from @file', async () => {
      const run = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 });
      await eventually('the run waiting for its event', async () => (await client.get(run.id)).status === 'waiting');
      const dataFile = join(files, 'approval.json');
      await writeFile(dataFile, '{"by":"grace"}');
      expect(await wf(['runs', 'event', run.id, 'approved', '--data', `@${dataFile}`], env)).toMatchObject({
        code: 0,
        stdout: `event approved delivered: run ${run.id} resumes\n`,
      });
      expect(await client.waitForResult(run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: { by: 'grace' } });
      const early = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 }, { runAt: LATER() });
      const kept = await wf(['runs', 'event', early.id, 'approved', '--data', '{"by":"ada"}', '--json'], env);
      expect(kept).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(kept.stdout)).toEqual({ delivered: false });
    });

    it("sends an update and prints the handler's answer; a refused one exits 1 with its reason", async () => {
      const run = await client.start(approvalWorkflow, { timeoutMs: 3_600_000 });
      await eventually('the run waiting for its event', async () => (await client.get(run.id)).status === 'waiting');
      expect(await wf(['runs', 'update', run.id, 'comment', '--input', '"ship it"'], env)).toMatchObject({
        code: 0,
        stdout: 'update comment answered: {"comments":1}\n',
      });
      const json = await wf(['runs', 'update', run.id, 'comment', '--input', '"again"', '--json'], env);
      expect(JSON.parse(json.stdout)).toEqual({ comments: 2 });
      expect(await wf(['runs', 'update', run.id, 'comment', '--input', '""'], env)).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^wf: invalid_input: update comment: input: /),
      });
      expect(await wf(['runs', 'update', run.id, 'approve'], env)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^wf: update_not_declared: /) });
      await client.cancel(run.id);
    });
  });

  describe('dead letters', () => {
    let deadDb: TestDatabase;
    let dead: RunningCoordinator;

    beforeAll(async () => {
      deadDb = await createTestDatabase('cli_dead');
      dead = await startDeadLetteringCoordinator(deadDb.url);
    });

    afterAll(async () => {
      await dead?.close();
      await deadDb?.drop();
    });

    it('lists, redrives and deletes them', async () => {
      const deadClient = new WorkflowClient({ url: dead.url });
      const deadEnv = { WF_URL: dead.url };
      const [redriven, deleted] = await deadClient.startMany([
        { workflow: echoWorkflow, input: 1 },
        { workflow: echoWorkflow, input: 2 },
      ]);
      const letters = await eventually('both runs dead-lettered', async () => {
        const { deadLetters } = await deadClient.listDeadLetters();
        return deadLetters.length === 2 ? new Map(deadLetters.map((letter) => [letter.runId, letter.id])) : undefined;
      });
      const human = await wf(['dead-letters', 'list'], deadEnv);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      expect(human.stdout).toMatch(/^ID\s+ORIGIN\s+RUN\s+QUEUE\s+REASON\s+CREATED\s+MESSAGE$/m);
      expect(human.stdout).toMatch(new RegExp(`^${letters.get(redriven.id)}\\s+outbox\\s+${redriven.id}\\s+echo:1\\s+publish_failed\\s`, 'm'));
      const json = JSON.parse((await wf(['dead-letters', 'list', '--limit', '1', '--json'], deadEnv)).stdout) as { deadLetters: unknown[]; nextCursor: string };
      expect(json.deadLetters).toHaveLength(1);
      expect(json.nextCursor).toEqual(expect.any(String));

      expect(await wf(['dead-letters', 'redrive', letters.get(redriven.id)!], deadEnv)).toMatchObject({
        code: 0,
        stdout: `dead letter ${letters.get(redriven.id)} redriven: republished (run queued)\n`,
      });
      expect(await wf(['dead-letters', 'delete', letters.get(deleted.id)!, '--json'], deadEnv)).toMatchObject({ code: 0, stderr: '' });
      expect(await wf(['dead-letters', 'delete', letters.get(deleted.id)!], deadEnv)).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `wf: dead_letter_not_found: dead letter ${letters.get(deleted.id)} does not exist\n`,
      });
    });
  });

  describe('schedules', () => {
    it('creates, lists, shows, pauses, resumes, triggers and deletes a schedule', async () => {
      const created = await wf(
        ['schedules', 'create', 'echo', '1', '--cron', '0 30 2 * * *', '--timezone', 'Europe/Berlin', '--input', '"nightly"', '--catch-up', 'all', '--paused'],
        env,
      );
      expect(created).toMatchObject({ code: 0, stderr: '' });
      const id = /^schedule\s+(\S+)$/m.exec(created.stdout)![1];
      expect(created.stdout).toMatch(/^fires\s+cron '0 30 2 \* \* \*' Europe\/Berlin$/m);
      expect(created.stdout).toMatch(/^catch up\s+all$/m);
      expect(created.stdout).toMatch(/^state\s+paused$/m);

      const listed = await wf(['schedules', 'list', '--workflow', 'echo'], env);
      expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+echo\\s+1\\s+cron '0 30 2 \\* \\* \\*' Europe/Berlin\\s+paused\\s+-$`, 'm'));
      expect(JSON.parse((await wf(['schedules', 'get', id, '--json'], env)).stdout)).toMatchObject({ id, input: 'nightly', paused: true });

      expect(await wf(['schedules', 'resume', id], env)).toMatchObject({
        code: 0,
        stdout: expect.stringMatching(new RegExp(`^schedule ${id} resumed: next run at \\S+Z\n$`)),
      });
      expect(await wf(['schedules', 'pause', id], env)).toMatchObject({ code: 0, stdout: `schedule ${id} paused\n` });
      const triggered = JSON.parse((await wf(['schedules', 'trigger', id, '--json'], env)).stdout) as { run: RunView };
      expect(await client.waitForResult(triggered.run.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', output: 'nightly' });
      expect(await wf(['schedules', 'delete', id], env)).toMatchObject({ code: 0, stdout: `schedule ${id} deleted\n` });
      expect(await wf(['schedules', 'get', id], env)).toMatchObject({ code: 1, stderr: `wf: schedule_not_found: schedule ${id} does not exist\n` });
    });

    it('says why a schedule is refused, and needs --cron or --every', async () => {
      const refused = await wf(['schedules', 'create', 'echo', '1', '--cron', 'at noon'], env);
      expect(refused).toMatchObject({ code: 1, stdout: '' });
      expect(refused.stderr).toMatch(/^wf: invalid_cron: cron "at noon" is not a cron expression/);
      expect(await wf(['schedules', 'create', 'echo', '1'], env)).toMatchObject({
        code: 1,
        stderr: 'wf: invalid_schedule: give exactly one of cron and intervalMs\n',
      });
      expect((await wf(['schedules', 'create', 'echo', '1', '--every', '500', '--overlap', 'queue'], env)).code).toBe(2);
    });
  });

  describe('workers', () => {
    it('lists the registered workers for a human and as JSON', async () => {
      const id = await eventually('the worker registered', async () => (await client.listWorkers()).items[0]?.id);
      const human = await wf(['workers'], env);
      expect(human).toMatchObject({ code: 0, stderr: '' });
      expect(human.stdout).toMatch(/^ID\s+STATE\s+BUILD\s+SUBSCRIBER\s+RUNS\s+LAST SEEN\s+WORKFLOWS$/m);
      // Its build: the worker app sets none here, so the default, the version of the package.json above the entry (Jest's: this repository's).
      const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
      expect(human.stdout).toMatch(new RegExp(`^${id}\\s+online\\s+${version.replaceAll('.', '\\.')}\\s+http\\s+\\d+/10\\s+\\S+\\s+.*\\becho@1\\b`, 'm'));
      const json = JSON.parse((await wf(['workers', '--json'], env)).stdout) as { items: { id: string; online: boolean }[] };
      expect(json.items.map((worker) => [worker.id, worker.online])).toEqual([[id, true]]);
    });
  });

  describe('workflows', () => {
    it('pauses, limits and resumes a version, listing it for a human and as JSON', async () => {
      expect(await wf(['workflows', 'pause', 'cli-flow', '1', '--shard', 'eu'], env)).toMatchObject({
        code: 0,
        stdout: 'workflow cli-flow 1: paused in shards eu; no limits\n',
      });
      expect(await wf(['workflows', 'limits', 'cli-flow', '1', '--concurrency', '3', '--rate', '2.5'], env)).toMatchObject({
        code: 0,
        stdout: 'workflow cli-flow 1: paused in shards eu; limits: concurrency 3, ratePerSecond 2.5\n',
      });
      // Limits not given stay; `none` clears one.
      expect((await wf(['workflows', 'limits', 'cli-flow', '1', '--concurrency', 'none'], env)).stdout).toBe(
        'workflow cli-flow 1: paused in shards eu; limits: ratePerSecond 2.5\n',
      );
      expect((await wf(['workflows', 'limits', 'cli-flow', '1', '--rate-per-key', '4'], env)).stdout).toBe(
        'workflow cli-flow 1: paused in shards eu; limits: ratePerSecond 2.5, ratePerKeyPerSecond 4\n',
      );
      const human = await wf(['workflows', 'list'], env);
      expect(human.stdout).toMatch(/^WORKFLOW\s+VERSION\s+PAUSED\s+RUNNING\s+CONCURRENCY\s+PER KEY\s+RATE\/S\s+RATE\/S PER KEY$/m);
      expect(human.stdout).toMatch(/^cli-flow\s+1\s+shards eu\s+0\s+-\s+-\s+2\.5\s+4$/m);
      expect(await wf(['workflows', 'resume', 'cli-flow', '1'], env)).toMatchObject({
        code: 0,
        stdout: 'workflow cli-flow 1: not paused; limits: ratePerSecond 2.5, ratePerKeyPerSecond 4\n',
      });
      expect((await wf(['workflows', 'limits', 'cli-flow', '1', '--clear'], env)).stdout).toBe('workflow cli-flow 1: not paused; no limits\n');
      const json = JSON.parse((await wf(['workflows', 'list', '--json'], env)).stdout) as { items: { name: string; paused: boolean }[] };
      expect(json.items).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'cli-flow', paused: false })]));
      expect(await wf(['workflows', 'limits', 'cli-flow', '1', '--rate', '-1'], env)).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/Must be a number above 0, or none/),
      });
    });
  });

  describe('errors', () => {
    it.each([
      ['an unknown command', ['runs', 'launch', 'x'], /^wf: unknown command 'launch'/],
      ['a missing argument', ['runs', 'start', 'echo'], /^wf: missing required argument 'version'/],
      ['input that is not JSON', ['runs', 'start', 'echo', '1', '--input', '{oops'], /^wf: option '--input <json>' argument '\{oops' is invalid\. Not JSON/],
      ['an unreadable input file', ['runs', 'start', 'echo', '1', '--input', '@/nonexistent/input.json'], /Cannot read \/nonexistent\/input\.json \(ENOENT\)/],
      ['a status that does not exist', ['runs', 'list', '--status', 'sleeping'], /Allowed choices are queued, running/],
      ['a priority that is not a number', ['runs', 'start', 'echo', '1', '--priority', 'high'], /Must be an integer/],
      ['a time that is not a time', ['runs', 'start', 'echo', '1', '--run-at', 'tomorrow'], /Must be an ISO 8601 time/],
      ['a time without its offset', ['runs', 'start', 'echo', '1', '--run-at', '2030-06-01T10:00:00'], /Must be an ISO 8601 time with its offset/],
      ['a list bound that is not a time', ['runs', 'list', '--since', 'yesterday'], /Must be an ISO 8601 time/],
      ['an idempotency key without its workflow', ['runs', 'list', '--key', 'k'], /^wf: --key needs --workflow/],
      ['a runs command without a subcommand', ['runs'], /Usage: wf runs/],
    ])('exits 2 for %s, sending nothing', async (_case, args, message) => {
      const before = (await client.list({ limit: 500 })).runs.length;
      const result = await wf(args, env);
      expect(result).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(message) });
      expect((await client.list({ limit: 500 })).runs).toHaveLength(before);
    });

    it('exits 2 for a coordinator URL that is not an http URL', async () => {
      expect(await wf(['runs', 'list'], { WF_URL: 'localhost:3000' })).toMatchObject({
        code: 2,
        stderr: 'wf: the coordinator URL (--url or WF_URL) must be an http(s) URL, not "localhost:3000"\n',
      });
    });

    it('prints help and its version with exit code 0', async () => {
      const help = await wf(['runs', 'start', '--help']);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toContain('Usage: wf runs start [options] <workflow> <version>');
      expect(await wf(['--version'])).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    });

    it("prints the API's reason and message in one line and exits 1", async () => {
      expect(await wf(['runs', 'get', UNKNOWN_RUN], env)).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `wf: run_not_found: run ${UNKNOWN_RUN} does not exist\n`,
      });
      expect(await wf(['runs', 'get', 'not-a-run'], env)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^wf: invalid_run_id: [^\n]+\n$/) });
      expect(await wf(['runs', 'start', 'echo', '1', '--priority', '5000'], env)).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^wf: invalid_priority: [^\n]+\n$/),
      });
    });

    it('says which URL it could not reach, preferring --url to WF_URL', async () => {
      const nowhere = `http://127.0.0.1:${await freePort()}`;
      expect(await wf(['runs', 'get', UNKNOWN_RUN, '--url', nowhere], env)).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `wf: unreachable: no coordinator answered at ${nowhere} (GET /v1/runs/${UNKNOWN_RUN}: ECONNREFUSED)\n`,
      });
    });

    it('asks http://127.0.0.1:3000 without --url or WF_URL', async () => {
      // Whatever answers there is what wf asked: here, a stand-in with an error body of its own.
      const standIn = createServer((request, response) => {
        response.writeHead(503, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ statusCode: 503, error: 'Service Unavailable', reason: 'stand_in', message: `${request.method} ${request.url}` }));
      });
      await new Promise<void>((resolve, reject) => standIn.once('error', reject).listen(3000, '127.0.0.1', resolve));
      try {
        expect(await wf(['runs', 'list', '--limit', '3'])).toMatchObject({ code: 1, stderr: 'wf: stand_in: GET /v1/runs?limit=3\n' });
      } finally {
        await new Promise((resolve) => standIn.close(resolve));
      }
    });
  });

  describe('authentication', () => {
    let secured: RunningCoordinator;

    beforeAll(async () => {
      secured = await startCoordinator(db.url, { authDisabled: false, clientToken: 'cli-client-token', workerToken: 'cli-worker-token' });
    });

    afterAll(async () => {
      await secured?.close();
    });

    it('sends the token from --token or WF_TOKEN, --token first', async () => {
      const url = { WF_URL: secured.url };
      expect(await wf(['runs', 'list', '--limit', '1'], url)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^wf: unauthorized: [^\n]+\n$/) });
      expect(await wf(['runs', 'list', '--limit', '1'], { ...url, WF_TOKEN: 'cli-client-token' })).toMatchObject({ code: 0, stderr: '' });
      expect(await wf(['runs', 'list', '--limit', '1', '--token', 'cli-client-token'], { ...url, WF_TOKEN: 'wrong' })).toMatchObject({ code: 0, stderr: '' });
    });
  });
});
