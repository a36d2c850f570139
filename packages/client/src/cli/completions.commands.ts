import type { Command } from 'commander';
import type { JsonValue } from '@nest-durable/common';
import { parseJsonArgument } from './arguments';
import type { Invocation } from './invocation';

interface CompleteOptions {
  data?: JsonValue;
  fail?: string;
  errorName?: string;
}

/** `wf complete`: finish a step a workflow made a completion token for (ctx.awaitExternal), as an outside system would. */
export function registerCompletionCommands(program: Command, invocation: Invocation): void {
  program
    .command('complete <token>')
    .description('complete (or, with --fail, fail) the step of a completion token; takes no client token: the completion token is the credential')
    .option('--data <json>', "the step's data (with --fail: the error's data): JSON, or @file to read it from a file", parseJsonArgument)
    .option('--fail <message>', 'fail the step with this error message instead of completing it')
    .option('--error-name <name>', 'with --fail: the error name (default Error)')
    .action(
      invocation.action(async ({ client, output }, token: string, options: CompleteOptions) => {
        const accepted =
          options.fail === undefined
            ? await client.complete(token, options.data)
            : await client.fail(token, { message: options.fail, name: options.errorName, data: options.data });
        const what = options.fail === undefined ? 'completed' : 'failed';
        output.result(accepted, () => (accepted.delivered ? `step ${what}: its run resumes` : `step ${what}: kept until its run waits on it`));
      }),
    );
}
