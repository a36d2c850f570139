import { Redis } from 'ioredis';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { eventually } from './poll';

export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix of its own for each suite, so suites sharing a Redis never see each other's keys. */
export function testPrefix(suite: string): string {
  return `test:${suite}:${randomBytes(4).toString('hex')}:`;
}

/** A redis-server process of the test's own, to stop and restart without touching the shared one. */
export class RedisServer {
  private process: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.process = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    await eventually('redis-server to answer', () => probe.connect().then(() => probe.ping().then(() => true), () => false));
    probe.disconnect();
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}
