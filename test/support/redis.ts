import { Redis } from 'ioredis';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { eventually } from './poll';
import { exitOf, type ProcessExit } from './processes';

export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix of its own for each suite, so suites sharing a Redis never see each other's keys. */
export function testPrefix(suite: string): string {
  return `test:${suite}:${randomBytes(4).toString('hex')}:`;
}

/** A redis-server process of the test's own, to stop and restart without touching the shared one. */
export class RedisServer {
  /** The server's log, across restarts. */
  output = '';
  private process: ChildProcess | undefined;
  private exit: Promise<ProcessExit> | undefined;

  /** `args` are extra redis-server options, e.g. `['--cluster-enabled', 'yes']`. */
  constructor(
    readonly port: number,
    private readonly args: string[] = [],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return !!this.process && this.process.exitCode === null && this.process.signalCode === null;
  }

  /** How the server started last ended (pending while it runs). */
  get exited(): Promise<ProcessExit> {
    if (!this.exit) throw new Error('redis-server was never started');
    return this.exit;
  }

  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk) => (this.output += chunk));
    child.stderr!.on('data', (chunk) => (this.output += chunk));
    this.process = child;
    this.exit = exitOf(child);
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    await eventually('redis-server to answer', () =>
      probe.connect().then(
        () => probe.ping().then(() => true),
        () => false,
      ),
    );
    probe.disconnect();
  }

  /** SIGKILL: the data (never persisted) is gone, as when a Redis without persistence dies. */
  async stop(): Promise<void> {
    if (!this.process || !this.alive) return;
    this.process.kill('SIGKILL');
    await this.exit;
  }
}
