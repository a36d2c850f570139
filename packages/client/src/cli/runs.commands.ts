import { type Command } from 'commander';
import { type JsonValue, RUN_STATUSES, type RunStatus, type RunView } from '@nest-durable/common';
import { parseIntegerArgument, parseJsonArgument, parseStatusesArgument, parseTimeArgument, tagArgument } from './arguments';
import { EXIT_FAILED, EXIT_OK } from './exit-codes';
import { formatRun, formatRunLine, formatRunList, formatTransitions } from './format';
import type { Invocation } from './invocation';
import { registerRunActionCommands, type RunFilterArguments, runFilterOf, withRunFilterOptions } from './run-actions.commands';
import { watchRun } from './watch';
import { fetchHistories, historyLine } from '../run-histories';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';

interface StartOptions {
  input?: JsonValue;
  idempotencyKey?: string;
  priority?: number;
  runAt?: Date;
  shard?: string;
  tag?: Record<string, string>;
  traceparent?: string;
  wait?: boolean;
}

interface ExportOptions {
  status?: RunStatus[];
  limit?: number;
  out?: string;
}

interface ListOptions extends RunFilterArguments {
  limit?: number;
  cursor?: string;
}

/** A run that ended other than completed fails the command that waited for it. */
export function exitCodeOf(run: RunView): number {
  return run.status === 'completed' ? EXIT_OK : EXIT_FAILED;
}

/** `wf runs …`: start, inspect, watch and steer runs. */
export function registerRunCommands(program: Command, invocation: Invocation): void {
  const runs = program.command('runs').description('start, inspect, watch and steer runs');

  runs
    .command('start <workflow> <version>')
    .description('start a run of a workflow version')
    .option('--input <json>', 'the input: JSON, or @file to read it from a file', parseJsonArgument)
    .option('--idempotency-key <key>', 'starting again with this key returns the first run')
    .option('--priority <n>', 'higher runs first among due runs (-1000..1000, default 0)', parseIntegerArgument)
    .option('--run-at <time>', 'not before this ISO 8601 time', parseTimeArgument)
    .option('--shard <shard>', 'only workers serving this shard take the run')
    .option('--concurrency-key <key>', "runs with this key share their version's concurrencyPerKey slots")
    .option('--tag <key=value>', 'a tag to find the run by (repeatable)', tagArgument('='))
    .option('--traceparent <traceparent>', "the W3C traceparent of a span whose trace the run joins (a CI job's, say)")
    .option('--wait', 'wait for the run to end; exit 1 if it failed or was cancelled')
    .action(
      invocation.action(async ({ client, output }, workflow: string, version: string, options: StartOptions) => {
        const { input, tag, traceparent, ...start } = options;
        const trace = traceparent === undefined ? undefined : { traceparent };
        const started = await client.start({ name: workflow, version }, input, { ...start, tags: tag, trace });
        if (started.warning) output.warning(started.warning.reason, started.warning.message);
        if (!options.wait) {
          output.result(started, () => formatRunLine(started));
          return EXIT_OK;
        }
        const run = await client.waitForResult(started.id, { timeoutMs: Infinity });
        output.result(run, () => formatRun(run));
        return exitCodeOf(run);
      }),
    );

  runs
    .command('get <id>')
    .description('show a run and its steps')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const run = await client.get(id);
        output.result(run, () => formatRun(run));
      }),
    );

  withRunFilterOptions(runs.command('list').description('list runs, newest first'))
    .option('--limit <n>', 'at most this many (1..500, default 50)', parseIntegerArgument)
    .option('--cursor <cursor>', 'the page after this cursor (printed after a full page)')
    .action(
      invocation.action(async ({ client, output }, { limit, cursor, ...filter }: ListOptions) => {
        const page = await client.list({ ...runFilterOf(filter), limit, cursor });
        output.result(page, () => formatRunList(page.runs, page.nextCursor));
      }),
    );

  runs
    .command('export <workflow> <version>')
    .description("write the runs of a workflow version with their recorded steps, one JSON line each ({run, steps}): replayHistories' input")
    .option(
      '--status <statuses>',
      `only runs in these statuses, comma-separated (${RUN_STATUSES.join(', ')}; queued,running,waiting: the runs in flight)`,
      parseStatusesArgument,
    )
    .option('--limit <n>', 'at most this many runs, newest first (default: all)', parseIntegerArgument)
    .option('--out <file>', 'write them to this file instead of stdout')
    .action(
      invocation.action(async ({ client, output }, workflow: string, version: string, options: ExportOptions) => {
        const histories = fetchHistories(client, { workflow, version, status: options.status, limit: options.limit });
        if (options.out === undefined) {
          for await (const history of histories) output.data(historyLine(history));
          return;
        }
        // Written beside it and renamed when whole: a failed export never leaves a file that looks complete.
        const partial = `${options.out}.partial`;
        const file = createWriteStream(partial);
        let count = 0;
        try {
          for await (const history of histories) {
            if (!file.write(historyLine(history))) await once(file, 'drain');
            count++;
          }
        } catch (error) {
          file.destroy();
          await rm(partial, { force: true });
          throw error;
        }
        file.end();
        await finished(file);
        await rename(partial, options.out);
        output.result({ exported: count, file: options.out }, () => `exported ${count} run${count === 1 ? '' : 's'} to ${options.out}`);
      }),
    );

  runs
    .command('history <id>')
    .description("show a run's state transitions, oldest first")
    .option('--limit <n>', 'at most this many (1..1000, default 1000)', parseIntegerArgument)
    .option('--after <cursor>', 'the page after this cursor (printed after a full page)')
    .action(
      invocation.action(async ({ client, output }, id: string, page: { after?: string; limit?: number }) => {
        const history = await client.transitions(id, page);
        output.result(history, () => formatTransitions(history.items, history.nextCursor));
      }),
    );

  runs
    .command('query <id> <name>')
    .description('what the run recorded under a name: a value it exposed (or its query handler answered), else its last task of that name')
    .action(
      invocation.action(async ({ client, output }, id: string, name: string) => {
        const answer = await client.query(id, name);
        output.result(answer, () => JSON.stringify(answer.value, null, 2));
      }),
    );

  runs
    .command('queries <id>')
    .description('every value the run exposed (or its query handlers answered): name, when, value')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const listed = await client.values(id);
        const { values } = listed;
        output.result(listed, () =>
          values.length === 0 ? 'no values exposed' : values.map((entry) => `${entry.name}\t${entry.updatedAt}\t${JSON.stringify(entry.value)}`).join('\n'),
        );
      }),
    );

  runs
    .command('watch <id>')
    .description('print steps and progress as they are recorded until the run ends; exit 1 if it failed or was cancelled')
    .action(invocation.action(async (context, id: string) => exitCodeOf(await watchRun(context, id))));

  runs
    .command('cancel <id>')
    .description('cancel a run (and its unfinished child runs)')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const run = await client.cancel(id);
        output.result(run, () => formatRunLine(run));
      }),
    );

  runs
    .command('retry <id>')
    .description('run a failed run again as its next attempt, keeping its completed steps')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const run = await client.retry(id);
        output.result(run, () => `${formatRunLine(run)} (attempt ${run.attempt})`);
      }),
    );

  runs
    .command('wake <id>')
    .description("end a run's durable sleep now")
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const run = await client.wake(id);
        output.result(run, () => formatRunLine(run));
      }),
    );

  runs
    .command('event <id> <name>')
    .description('send an event to a run')
    .option('--data <json>', 'the event data: JSON, or @file to read it from a file', parseJsonArgument)
    .action(
      invocation.action(async ({ client, output }, id: string, name: string, options: { data?: JsonValue }) => {
        const accepted = await client.sendEvent(id, name, options.data);
        output.result(accepted, () =>
          accepted.delivered ? `event ${name} delivered: run ${id} resumes` : `event ${name} kept for the next wait of run ${id} on it`,
        );
      }),
    );

  registerRunActionCommands(runs, invocation);
  runs
    .command('update <id> <name>')
    .description("send an update to a run and print its handler's answer (exit 1 if the handler threw or the run ended first)")
    .option('--input <json>', 'the update input: JSON, or @file to read it from a file', parseJsonArgument)
    .option('--timeout-ms <ms>', 'give up waiting for the answer after this long (the update stays sent); default 60000', parseIntegerArgument)
    .action(
      invocation.action(async ({ client, output }, id: string, name: string, options: { input?: JsonValue; timeoutMs?: number }) => {
        const answer = await client.update(id, name, options.input, { timeoutMs: options.timeoutMs });
        output.result(answer, () => `update ${name} answered: ${JSON.stringify(answer)}`);
      }),
    );
}
