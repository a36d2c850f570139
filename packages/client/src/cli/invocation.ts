import type { Command } from 'commander';
import { isHttpUrl } from '../json-http.client';
import { WorkflowClient } from '../workflow.client';
import { UsageError } from './cli-errors';
import { EXIT_OK } from './exit-codes';
import { Output } from './output';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** What `wf` takes from its environment (WF_URL, WF_TOKEN), read once by main. */
export interface CliEnvironment {
  url?: string;
  token?: string;
}

export interface CliStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

interface GlobalOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

/** What a command works with: the client of the coordinator chosen, and where its results go. */
export interface CommandContext {
  client: WorkflowClient;
  output: Output;
}

/** One run of `wf`: builds each command's context from the global options, and keeps its exit code. */
export class Invocation {
  exitCode = EXIT_OK;
  /** The coordinator the command talks to, once known (for the unreachable message). */
  url: string | undefined;

  constructor(
    private readonly environment: CliEnvironment,
    readonly streams: CliStreams,
  ) {}

  /**
   * A commander action running `run` with the command's context, its arguments and its options; the
   * number `run` returns is the exit code (0 when it returns nothing).
   */
  action<A extends unknown[]>(run: (context: CommandContext, ...args: A) => Promise<number | undefined>): (...args: unknown[]) => Promise<void> {
    return async (...args) => {
      const command = args[args.length - 1] as Command;
      const context = this.contextFor(command.optsWithGlobals<GlobalOptions>());
      this.exitCode = (await run(context, ...(args.slice(0, -1) as A))) ?? EXIT_OK;
    };
  }

  private contextFor(options: GlobalOptions): CommandContext {
    const url = options.url ?? this.environment.url ?? DEFAULT_URL;
    if (!isHttpUrl(url)) throw new UsageError(`the coordinator URL (--url or WF_URL) must be an http(s) URL, not ${JSON.stringify(url)}`);
    this.url = url;
    return {
      client: new WorkflowClient({ url, token: options.token ?? this.environment.token }),
      output: new Output(options.json === true, this.streams.stdout, this.streams.stderr),
    };
  }
}
