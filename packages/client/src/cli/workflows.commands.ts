import type { Command } from 'commander';
import type { WorkflowLimits } from '@nest-durable/common';
import { parseLimitArgument } from './arguments';
import { formatWorkflowLine, formatWorkflowList } from './format';
import type { Invocation } from './invocation';

interface LimitOptions {
  concurrency?: number | 'none';
  concurrencyPerKey?: number | 'none';
  rate?: number | 'none';
  ratePerKey?: number | 'none';
  clear?: boolean;
}

const limit = (value: number | 'none') => (value === 'none' ? null : value);

/** `wf workflows …`: the workflow versions known, their pauses and limits. */
export function registerWorkflowCommands(program: Command, invocation: Invocation): void {
  const workflows = program.command('workflows').description('list workflow versions; pause, resume and limit them');

  workflows
    .command('list')
    .description('list the workflow versions known, with their pauses and the limits in force')
    .action(
      invocation.action(async ({ client, output }) => {
        const items = await client.listWorkflows();
        output.result({ items }, () => formatWorkflowList(items));
      }),
    );

  workflows
    .command('pause <workflow> <version>')
    .description('stop taking runs of the version (queued runs wait, running ones finish, starts are still accepted)')
    .option('--shard <shard>', 'only this shard of it')
    .action(
      invocation.action(async ({ client, output }, name: string, version: string, options: { shard?: string }) => {
        const view = await client.pauseWorkflow({ name, version }, options);
        output.result(view, () => formatWorkflowLine(view));
      }),
    );

  workflows
    .command('resume <workflow> <version>')
    .description('take runs of the version again (every shard, or with --shard that one)')
    .option('--shard <shard>', 'only this shard of it')
    .action(
      invocation.action(async ({ client, output }, name: string, version: string, options: { shard?: string }) => {
        const view = await client.resumeWorkflow({ name, version }, options);
        output.result(view, () => formatWorkflowLine(view));
      }),
    );

  workflows
    .command('limits <workflow> <version>')
    .description("set the version's limits through the API (each wins over the code's); the ones not given stay as they are")
    .option('--concurrency <n>', 'at most n runs of the version running at once (none: clear)', parseLimitArgument)
    .option('--concurrency-per-key <n>', 'at most n runs of one concurrency key running at once (none: clear)', parseLimitArgument)
    .option('--rate <n>', 'at most n runs started per second (none: clear)', parseLimitArgument)
    .option('--rate-per-key <n>', 'at most n runs of one concurrency key started per second (none: clear)', parseLimitArgument)
    .option('--clear', 'clear every limit set through the API: the code declares them again')
    .action(
      invocation.action(async ({ client, output }, name: string, version: string, options: LimitOptions) => {
        const ref = { name, version };
        let view = options.clear ? await client.clearWorkflowLimits(ref) : undefined;
        const given: WorkflowLimits = {
          ...(options.concurrency !== undefined ? { concurrency: limit(options.concurrency) } : {}),
          ...(options.concurrencyPerKey !== undefined ? { concurrencyPerKey: limit(options.concurrencyPerKey) } : {}),
          ...(options.rate !== undefined ? { ratePerSecond: limit(options.rate) } : {}),
          ...(options.ratePerKey !== undefined ? { ratePerKeyPerSecond: limit(options.ratePerKey) } : {}),
        };
        if (Object.keys(given).length > 0) {
          // The API replaces the limits it holds: keep the ones this command leaves alone.
          const current = view ?? (await client.listWorkflows()).find((workflow) => workflow.name === name && workflow.version === version);
          view = await client.setWorkflowLimits(ref, { ...(current?.apiLimits ?? {}), ...given });
        }
        view ??= (await client.listWorkflows()).find((workflow) => workflow.name === name && workflow.version === version);
        output.result(view ?? null, () => (view ? formatWorkflowLine(view) : `workflow ${name} ${version} is not known`));
      }),
    );
}
