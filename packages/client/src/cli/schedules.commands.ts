import { type Command, Option } from 'commander';
import { SCHEDULE_CATCH_UPS, SCHEDULE_OVERLAPS } from '@nest-durable/common';
import { parseIntegerArgument, parseJsonArgument } from './arguments';
import { formatRunLine, formatSchedule, formatScheduleList } from './format';
import type { Invocation } from './invocation';
import type { ScheduleOptions } from '../workflow.client.types';

/** The client's schedule options, as commander parses them: `--every` for `intervalMs`. */
type CreateOptions = Omit<ScheduleOptions, 'intervalMs'> & { every?: number };

/** `wf schedules …`: runs started at the times of a cron expression or an interval. */
export function registerScheduleCommands(program: Command, invocation: Invocation): void {
  const schedules = program.command('schedules').description('create, inspect, pause, resume, trigger and delete schedules');

  schedules
    .command('list')
    .description('list schedules, newest first')
    .option('--workflow <name>', 'only schedules of this workflow')
    .option('--limit <n>', 'at most this many (1..500, default 50)', parseIntegerArgument)
    .option('--cursor <cursor>', 'the page after this cursor (printed after a full page)')
    .action(
      invocation.action(async ({ client, output }, options: { workflow?: string; limit?: number; cursor?: string }) => {
        const page = await client.listSchedules(options);
        output.result(page, () => formatScheduleList(page.schedules, page.nextCursor));
      }),
    );

  schedules
    .command('get <id>')
    .description('show a schedule')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const schedule = await client.getSchedule(id);
        output.result(schedule, () => formatSchedule(schedule));
      }),
    );

  schedules
    .command('create <workflow> <version>')
    .description('start runs of a workflow version on a cron expression (--cron) or every n ms (--every)')
    .option('--cron <expression>', "5 fields, or 6 with seconds first, e.g. '0 30 9 * * 1-5'")
    .option('--every <ms>', 'every this many milliseconds', parseIntegerArgument)
    .option('--timezone <zone>', 'the IANA time zone of --cron (default UTC)')
    .option('--input <json>', 'the input of each run: JSON, or @file to read it from a file', parseJsonArgument)
    .option('--shard <shard>', 'only workers serving this shard take its runs')
    .option('--priority <n>', 'higher runs first among due runs (-1000..1000, default 0)', parseIntegerArgument)
    .addOption(new Option('--overlap <policy>', 'while the previous run is unfinished (default skip)').choices(SCHEDULE_OVERLAPS))
    .addOption(new Option('--catch-up <policy>', 'fire times missed while no coordinator was up (default latest)').choices(SCHEDULE_CATCH_UPS))
    .option('--paused', 'create it paused')
    .action(
      invocation.action(async ({ client, output }, workflow: string, version: string, options: CreateOptions) => {
        const { every, ...rest } = options;
        const schedule = await client.createSchedule({ name: workflow, version }, { ...rest, intervalMs: every });
        output.result(schedule, () => formatSchedule(schedule));
      }),
    );

  schedules
    .command('delete <id>')
    .description('delete a schedule (the runs it started stay)')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        await client.deleteSchedule(id);
        output.result({ id, deleted: true }, () => `schedule ${id} deleted`);
      }),
    );

  schedules
    .command('pause <id>')
    .description('stop a schedule firing until resumed')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const schedule = await client.pauseSchedule(id);
        output.result(schedule, () => `schedule ${id} paused`);
      }),
    );

  schedules
    .command('resume <id>')
    .description('fire again from the next fire time after now')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const schedule = await client.resumeSchedule(id);
        output.result(schedule, () => `schedule ${id} resumed: next run at ${schedule.nextRunAt}`);
      }),
    );

  schedules
    .command('trigger <id>')
    .description('start a run of the schedule now')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const triggered = await client.triggerSchedule(id);
        output.result(triggered, () => formatRunLine(triggered.run));
      }),
    );
}
