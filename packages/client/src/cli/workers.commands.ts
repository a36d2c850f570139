import type { Command } from 'commander';
import { formatWorkerList } from './format';
import type { Invocation } from './invocation';

/** `wf workers`: the worker registry. */
export function registerWorkerCommands(program: Command, invocation: Invocation): void {
  program
    .command('workers')
    .description('list the workers seen in the last hour: online or not, their build, subscriber, load and workflows')
    .action(
      invocation.action(async ({ client, output }) => {
        const workers = await client.listWorkers();
        output.result(workers, () => formatWorkerList(workers.items));
      }),
    );
}
