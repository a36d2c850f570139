import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { eventually } from './poll';

const ROOT = join(__dirname, '..', '..');
const running = new Set<AppProcess>();

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function exitOf(child: ChildProcess): Promise<ProcessExit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A real app process (run from TypeScript sources through scripts/register-ts.js). */
export class AppProcess {
  output = '';
  private readonly child: ChildProcess;
  readonly exited: Promise<ProcessExit>;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ['-r', join(ROOT, 'scripts/register-ts.js'), join(ROOT, entry)], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk) => (this.output += chunk));
    this.child.stderr!.on('data', (chunk) => (this.output += chunk));
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
