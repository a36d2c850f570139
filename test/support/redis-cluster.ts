import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { eventually } from './poll';
import { RedisServer } from './redis';

const run = promisify(execFile);

/**
 * A Redis Cluster of the test's own: six redis-server processes on loopback (3 masters, 3 replicas)
 * joined with `redis-cli --cluster create`, with a short node timeout so a killed master's replica is
 * promoted within seconds. Every process it starts, `stop()` ends.
 */
export class RedisCluster {
  readonly nodes: RedisServer[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'wf-redis-cluster-'));

  constructor(private readonly nodeTimeoutMs = 1_000) {}

  /** `host:port,…` of every node: the seed list REDIS_CLUSTER_NODES takes. */
  get seeds(): string {
    return this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
  }

  async start(): Promise<void> {
    for (let i = 0; i < 6; i++) {
      const port = await freeClusterPort();
      const node = new RedisServer(port, [
        '--cluster-enabled', 'yes',
        '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', String(this.nodeTimeoutMs),
        '--dir', this.dir,
      ]);
      await node.start();
      this.nodes.push(node);
    }
    await run('redis-cli', ['--cluster', 'create', ...this.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    await this.waitHealthy();
  }

  /** Until every live node reports the cluster `ok` with all 16384 slots served. */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    await eventually(
      'the Redis Cluster to be ok',
      async () => {
        for (const node of this.nodes.filter((n) => n.alive)) {
          const info = await this.clusterInfo(node.port);
          if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** The nodes that are masters now. */
  async masters(): Promise<RedisServer[]> {
    const alive = this.nodes.find((n) => n.alive)!;
    const client = new Redis(alive.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await client.connect();
      const lines = String(await client.cluster('NODES')).trim().split('\n');
      const ports = lines.filter((line) => line.includes('master') && !line.includes('fail')).map((line) => Number(line.split(' ')[1].split(':')[1].split('@')[0]));
      return this.nodes.filter((n) => n.alive && ports.includes(n.port));
    } finally {
      client.disconnect();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async clusterInfo(port: number): Promise<string> {
    const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return String(await client.cluster('INFO'));
    } catch {
      return '';
    } finally {
      client.disconnect();
    }
  }
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
