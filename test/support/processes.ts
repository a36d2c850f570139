import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { captureOutput } from './captured-logs';
import { eventually } from './poll';

const ROOT = join(__dirname, '..', '..');
const execFileAsync = promisify(execFile);
const running = new Set<AppProcess>();

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function exitOf(child: ChildProcess): Promise<ProcessExit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * A real app process: a `.ts` entry of this repository runs from its sources through
 * scripts/register-ts.js; a `.js` entry (a built app, e.g. one outside the repository) runs as it is,
 * in `cwd`.
 */
export class AppProcess {
  output = '';
  private readonly child: ChildProcess;
  readonly exited: Promise<ProcessExit>;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
    { cwd = ROOT }: { cwd?: string } = {},
  ) {
    // V8's own interrupt budget, not the apps' lower one (libs/config/src/jit-warm-up.ts, on V8 11 only): it pays
    // off over a long-lived process's first thousand runs, and a test's process lives seconds, where the earlier
    // optimising cost 12-20% more CPU (coordinators.e2e, two alternated pairs).
    const jit = process.versions.v8.startsWith('11.') ? ['--interrupt-budget=67584'] : [];
    const args = [...jit, ...(entry.endsWith('.ts') ? ['-r', join(ROOT, 'scripts/register-ts.js'), join(ROOT, entry)] : [entry])];
    this.child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        this.output += chunk;
        captureOutput(name, chunk.toString());
      });
    }
    this.exited = exitOf(this.child);
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async waitForOutput(text: string, timeoutMs = 30_000): Promise<void> {
    await eventually(`${this.name} to print "${text}"\n${this.output}`, async () => this.output.includes(text) || !this.alive, timeoutMs);
    if (!this.output.includes(text)) throw new Error(`${this.name} exited before printing "${text}":\n${this.output}`);
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGTERM, then SIGKILL if it does not exit in time. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGCONT');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Stops every process the tests started that is still running. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...running].map((app) => app.stop(5_000)));
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs a command to its end and returns its standard output; on failure the error carries all of its
 * output. `npm_*` variables of an enclosing `npm test` are left out, so an npm run in another project
 * is configured by that project alone.
 */
export async function runCommand(
  command: string,
  args: string[],
  { cwd = ROOT, env = {}, timeoutMs = 120_000 }: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<string> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  try {
    const { stdout } = await execFileAsync(command, args, {
      cwd,
      env: { ...inherited, NO_COLOR: '1', ...env },
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) failed: ${message}\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

/**
 * The TCP connections process `pid` holds open to 127.0.0.1:`port` (from `ss`), e.g. a coordinator's sessions on one
 * PostgreSQL server: what the process holds, which the server's pg_stat_activity does not tell (a backend outlives
 * its client while it waits without reading the socket).
 */
export async function connectionsTo(pid: number, port: number): Promise<string[]> {
  // Close-wait too: the server closed its end and the process still holds its own, which is as much a leak.
  const { stdout } = await execFileAsync('ss', ['-Htnp', 'state', 'established', 'state', 'close-wait', 'dst', `127.0.0.1:${port}`]);
  return stdout.split('\n').filter((line) => line.includes(`pid=${pid},`));
}
