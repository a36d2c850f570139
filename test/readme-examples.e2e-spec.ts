import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunView, WorkflowClient } from '@nest-durable/client';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningCoordinator, type RunningWorker, startCoordinator, startWorker } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { runCommand } from './support/processes';
import { buildClientPackage } from './support/wf-process';

const ROOT = join(__dirname, '..');
const MARKER = '<!-- runnable: test/readme-examples.e2e-spec.ts';
const RUN_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** The commands of each README block marked runnable: its lines, a line ending in `\` joined to the next. */
function runnableBlocks(readme: string): string[][] {
  return readme
    .split(MARKER)
    .slice(1)
    .map((after) => {
      const block = /^[^\n]*\n```bash\n([\s\S]*?)\n```/.exec(after);
      if (!block) throw new Error(`a runnable marker not followed by a bash block: ${after.slice(0, 200)}`);
      return block[1]
        .replaceAll('\\\n', '')
        .split('\n')
        .filter((line) => line.trim() !== '');
    });
}

/**
 * README's runnable examples (each ```bash block after a `<!-- runnable: … -->` line), run as a reader runs them
 * after `npm start`: each command in bash, in the repository, against a real coordinator and worker. What differs
 * is where they are: `localhost:3000` is this coordinator's address, and WF_URL names it to `wf` (whose default is
 * npm start's). `<id>` is the run the command before started (the first run id it printed). curl fails on an HTTP
 * error status (--fail-with-body), so an example the API refuses fails here.
 */
describe('README examples', () => {
  const blocks = runnableBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let worker: RunningWorker;
  let client: WorkflowClient;

  beforeAll(async () => {
    [db] = await Promise.all([createTestDatabase('readme_examples'), buildClientPackage()]);
    coordinator = await startCoordinator(db.url);
    worker = await startWorker(coordinator.url);
    client = new WorkflowClient({ url: coordinator.url });
  }, 120_000);

  afterAll(async () => {
    await worker?.close();
    await coordinator?.close();
    await db?.drop();
  });

  /** Runs the block's commands in order, each to a successful end; returns what each printed. */
  const run = async (commands: string[]): Promise<string[]> => {
    const printed: string[] = [];
    const coordinatorAddress = new URL(coordinator.url).host;
    for (const command of commands) {
      const startedBefore = printed.findLast((output) => RUN_ID.test(output))?.match(RUN_ID)?.[0];
      const resolved = command.replaceAll('localhost:3000', coordinatorAddress).replaceAll('<id>', startedBefore ?? '<id>');
      const script = `set -eo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n${resolved}`;
      printed.push(await runCommand('bash', ['-c', script], { env: { WF_URL: coordinator.url }, timeoutMs: 60_000 }));
    }
    return printed;
  };

  it('marks the quick start block and the command line examples runnable', () => {
    expect(blocks.map((commands) => commands[0].split(' ').slice(0, 2).join(' '))).toEqual(['curl -s', 'npx wf']);
  });

  it('runs the quick start block: the run started with curl completes, and so does the one wf starts', async () => {
    const [started, result, wf] = await run(blocks[0]);
    const startedRun = JSON.parse(started) as RunView;
    expect(JSON.parse(result)).toMatchObject({ id: startedRun.id, status: 'completed', output: { orderId: 'o-1', status: 'shipped' } });
    expect(wf).toMatch(/^status\s+completed$/m);
  });

  it('runs the command line examples: each succeeds, and the run started with --tag completes with its tags', async () => {
    await run(blocks[1]);
    const tagged = await eventually(
      'the tagged run to complete',
      async () => {
        const [run] = (await client.list({ tags: { tenant: 'acme' } })).runs;
        return run?.status === 'completed' && run;
      },
      15_000,
    );
    expect(tagged).toMatchObject({ workflow: 'order-processing', tags: { tenant: 'acme', channel: 'web' } });
  }, 90_000); // a dozen `npx wf` processes one after another, beside two other suites on two cores
});
