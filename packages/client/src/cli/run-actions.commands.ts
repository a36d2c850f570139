import { type Command, Option } from 'commander';
import { type BulkRunsResult, type JsonValue, RUN_STATUSES, type RunStatus } from '@nest-durable/common';
import { UsageError } from './cli-errors';
import { parseJsonArgument, parseTimeArgument, tagArgument } from './arguments';
import { formatRunLine } from './format';
import type { CommandContext, Invocation } from './invocation';
import type { RunFilterOptions } from '../workflow.client.types';

/** The runs list's filter options, as `wf runs list` and the bulk commands take them. */
export interface RunFilterArguments {
  workflow?: string;
  workflowVersion?: string;
  status?: RunStatus;
  key?: string;
  since?: Date;
  until?: Date;
  tag?: Record<string, string>;
}

/** Adds the runs list's filter options to `command`. */
export function withRunFilterOptions(command: Command): Command {
  return command
    .option('--workflow <name>', 'only runs of this workflow')
    .option('--workflow-version <version>', 'only runs of this version')
    .addOption(new Option('--status <status>', 'only runs in this status').choices(RUN_STATUSES))
    .option('--key <idempotencyKey>', 'the run started with this idempotency key (with --workflow)')
    .option('--since <time>', 'only runs created at or after this ISO 8601 time', parseTimeArgument)
    .option('--until <time>', 'only runs created before this ISO 8601 time', parseTimeArgument)
    .option('--tag <key:value>', 'only runs with this tag (repeatable: all must match)', tagArgument(':'));
}

/** The client's filter for the options (an idempotency key alone is a usage error: keys are per workflow). */
export function runFilterOf({ workflow, workflowVersion, status, key, since, until, tag }: RunFilterArguments): RunFilterOptions {
  if (key !== undefined && workflow === undefined) throw new UsageError('--key needs --workflow: an idempotency key is per workflow');
  return {
    workflow,
    version: workflowVersion,
    status,
    idempotencyKey: key,
    createdAfter: since?.toISOString(),
    createdBefore: until?.toISOString(),
    tags: tag,
  };
}

const BULK = {
  cancel: { verb: 'cancel', done: 'cancelled', which: 'unfinished' },
  retry: { verb: 'retry', done: 'retried', which: 'failed' },
} as const;

/** `wf runs rerun`, `wf runs bulk-cancel`, `wf runs bulk-retry`. */
export function registerRunActionCommands(runs: Command, invocation: Invocation): void {
  runs
    .command('rerun <id>')
    .description('start a new run of a finished run (its version, shard, priority, tags), with its input or --input; tagged rerun-of')
    .option('--input <json>', 'the new input: JSON, or @file to read it from a file (default: the old run’s)', parseJsonArgument)
    .action(
      invocation.action(async ({ client, output }, id: string, options: { input?: JsonValue }) => {
        const run = await client.rerun(id, options.input === undefined ? {} : { input: options.input });
        if (run.warning) output.warning(run.warning.reason, run.warning.message);
        output.result(run, () => `${formatRunLine(run)} (rerun of ${id})`);
      }),
    );

  for (const kind of ['cancel', 'retry'] as const) {
    const words = BULK[kind];
    withRunFilterOptions(
      runs
        .command(`bulk-${kind}`)
        .description(`${words.verb} every ${words.which} run the filter matches (as runs list filters); counts them first, acts only with --yes`),
    )
      .option('--yes', `${words.verb} them (without it, only says how many match)`)
      .action(
        invocation.action(async (context, options: RunFilterArguments & { yes?: boolean }) => {
          await bulk(context, kind, runFilterOf(options), options.yes === true);
        }),
      );
  }
}

/** Counts the runs, then (with `yes`) acts on them a page at a time until none is left, and says how many. */
async function bulk({ client, output }: CommandContext, kind: 'cancel' | 'retry', filter: RunFilterOptions, yes: boolean): Promise<void> {
  const words = BULK[kind];
  const call = (options: { dryRun?: boolean; before?: string }) => (kind === 'cancel' ? client.cancelRuns(filter, options) : client.retryRuns(filter, options));
  const count = await call({ dryRun: true });
  const counted = `${count.capped ? 'at least ' : ''}${count.matched} ${words.which} run${count.matched === 1 ? '' : 's'} match`;
  if (!yes) {
    output.result(count, () => `${counted}; pass --yes to ${words.verb} them`);
    return;
  }
  let page: BulkRunsResult = count;
  let acted = 0;
  do {
    page = await call({ before: page.before ?? undefined });
    acted += page.acted;
  } while (page.before !== null);
  output.result({ matched: count.matched, capped: count.capped, acted }, () => `${counted}; ${words.done} ${acted}`);
}
