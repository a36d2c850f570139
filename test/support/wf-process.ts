import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { capturedLogger } from './captured-logs';
import { buildPackages } from './packages';
import { eventually } from './poll';

const ROOT = join(__dirname, '..', '..');
/** The built CLI, as `node packages/client/dist/cli/main.js` runs it. */
export const WF_MAIN = join(ROOT, 'packages/client/dist/cli/main.js');
/** The bin npm links for the workspace, run as a user's shell runs `npx wf`. */
export const WF_BIN = join(ROOT, 'node_modules/.bin/wf');

/** Builds @nest-durable/common and @nest-durable/client (with its CLI) to their dist, once per test run. */
export const buildClientPackage = (): Promise<void> => buildPackages('common', 'client');

export interface WfResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const running = new Set<WfProcess>();

/**
 * One `wf` process with its own environment (WF_URL, WF_TOKEN only as given). Its output is kept
 * for the test's log, shown if the test fails.
 */
export class WfProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<WfResult>;
  private readonly child: ChildProcess;

  constructor(
    readonly args: string[],
    env: Record<string, string> = {},
    executable: 'main' | 'bin' = 'main',
  ) {
    const inherited = { ...process.env };
    delete inherited.WF_URL;
    delete inherited.WF_TOKEN;
    const [command, commandArgs] = executable === 'bin' ? [WF_BIN, args] : [process.execPath, [WF_MAIN, ...args]];
    this.child = spawn(command, commandArgs, { cwd: ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    running.add(this);
    this.exited = new Promise<WfResult>((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }));
    }).then((result) => {
      running.delete(this);
      capturedLogger.log(`wf ${args.join(' ')} → exit ${result.code ?? result.signal}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`, 'wf');
      return result;
    });
  }

  async waitForStdout(text: string, timeoutMs = 10_000): Promise<void> {
    await eventually(`wf ${this.args.join(' ')} to print "${text}"`, async () => this.stdout.includes(text), timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}; it printed:\n${this.stdout}${this.stderr}`);
    });
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}

/** Runs `wf args` to its end. */
export function wf(args: string[], env: Record<string, string> = {}): Promise<WfResult> {
  return new WfProcess(args, env).exited;
}

/** Kills every `wf` process a test left running. */
export async function stopAllWf(): Promise<void> {
  await Promise.all(
    [...running].map((process) => {
      process.signal('SIGKILL');
      return process.exited;
    }),
  );
}
