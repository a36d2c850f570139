import { type Command, Option } from 'commander';
import { STATS_WINDOWS, type StatsWindow } from '@nest-durable/common';
import { formatStats } from './format';
import type { Invocation } from './invocation';

/** `wf stats`: what the dashboard's overview shows. */
export function registerStatsCommand(program: Command, invocation: Invocation): void {
  program
    .command('stats')
    .description('run counts and throughput over the last hour or day, queue depths, the outbox, dead letters, workers online')
    .addOption(new Option('--window <window>', 'how far back the counts go').choices(STATS_WINDOWS).default('1h'))
    .action(
      invocation.action(async ({ client, output }, options: { window: StatsWindow }) => {
        const stats = await client.stats(options.window);
        output.result(stats, () => formatStats(stats));
      }),
    );
}
