import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeFailure, UsageError } from './cli-errors';
import { registerCompletionCommands } from './completions.commands';
import { registerDeadLetterCommands } from './dead-letters.commands';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exit-codes';
import { type CliEnvironment, type CliStreams, DEFAULT_URL, Invocation } from './invocation';
import { registerRunCommands } from './runs.commands';
import { registerStatsCommand } from './stats.commands';
import { registerScheduleCommands } from './schedules.commands';
import { registerWorkerCommands } from './workers.commands';
import { registerWorkflowCommands } from './workflows.commands';

/** The package's own version (package.json is two levels up from both src/cli and dist/cli). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
}

function buildProgram(invocation: Invocation): Command {
  const { stdout, stderr } = invocation.streams;
  const program = new Command('wf')
    .description(
      'Start, inspect and steer the runs, schedules, dead letters, workers and workflow versions of a nest-durable-workflows coordinator, and see its numbers.',
    )
    .version(packageVersion())
    .option('--url <url>', `the coordinator (default: $WF_URL, else ${DEFAULT_URL})`)
    .option('--token <token>', "the coordinator's CLIENT_TOKEN (default: $WF_TOKEN)")
    .option('--json', 'print JSON on stdout, for scripts')
    // Set before the subcommands are added, which inherit them: usage errors throw (exit code 2) instead of exiting.
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => stdout.write(text),
      writeErr: (text) => stderr.write(text),
      outputError: (text, write) => write(`wf: ${text.replace(/^error: /, '')}`),
    });
  registerRunCommands(program, invocation);
  registerScheduleCommands(program, invocation);
  registerDeadLetterCommands(program, invocation);
  registerStatsCommand(program, invocation);
  registerWorkerCommands(program, invocation);
  registerWorkflowCommands(program, invocation);
  registerCompletionCommands(program, invocation);
  return program;
}

/** Runs `wf` with `argv` (the arguments after the program name) and resolves with its exit code. */
export async function runCli(argv: string[], environment: CliEnvironment, streams: CliStreams): Promise<number> {
  const invocation = new Invocation(environment, streams);
  try {
    await buildProgram(invocation).parseAsync(argv, { from: 'user' });
    return invocation.exitCode;
  } catch (error) {
    // Commander has printed its message (or the help or version asked for).
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    streams.stderr.write(`wf: ${describeFailure(error, invocation.url)}\n`);
    return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILED;
  }
}
