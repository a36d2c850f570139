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
    return this.seedNodes.map(({ host, port }) => `${host}:${port}`).join(',');
  }

  /** Every node, as the config holds REDIS_CLUSTER_NODES. */
  get seedNodes(): { host: string; port: number }[] {
    return this.nodes.map((node) => ({ host: '127.0.0.1', port: node.port }));
  }

  async start(): Promise<void> {
    for (let i = 0; i < 6; i++) {
      const port = await freeClusterPort();
      const node = new RedisServer(port, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        String(this.nodeTimeoutMs),
        // Replicas sync at once (not after the default 5 s wait for more replicas to join the transfer).
        '--repl-diskless-sync-delay',
        '0',
        '--dir',
        this.dir,
      ]);
      await node.start();
      this.nodes.push(node);
    }
    await run('redis-cli', ['--cluster', 'create', ...this.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    await this.waitHealthy();
  }

  /**
   * Until every live node reports the cluster `ok` with all 16384 slots served, and every live replica
   * has synced with its master (a replica that never synced refuses to take over when its master dies).
   */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    await eventually('the Redis Cluster to be ok', () => this.healthy(), timeoutMs);
  }

  /** The nodes that are masters now. */
  async masters(): Promise<RedisServer[]> {
    const ports = (await this.clusterNodes(this.nodes.find((n) => n.alive)!.port))
      .filter((node) => node.flags.includes('master') && !node.flags.includes('fail'))
      .map((node) => node.port);
    return this.nodes.filter((n) => n.alive && ports.includes(n.port));
  }

  /** The master serving `slot` now, as every live node sees it (undefined while they disagree or none does). */
  async masterOf(slot: number): Promise<RedisServer | undefined> {
    const views = await Promise.all(this.nodes.filter((n) => n.alive).map((n) => this.clusterNodes(n.port)));
    const owners = new Set(
      views.map(
        (nodes) =>
          nodes.find((node) => node.flags.includes('master') && !node.flags.includes('fail') && node.slots.some(([from, to]) => slot >= from && slot <= to))
            ?.port,
      ),
    );
    const [port] = owners;
    return owners.size === 1 && port !== undefined ? this.nodes.find((n) => n.port === port && n.alive) : undefined;
  }

  /**
   * `kill -9` of the master serving `slot`, then waits until its replica was promoted: every live
   * node sees all the slots it served served by one live master, and reports the cluster ok.
   */
  async killMasterOf(slot: number, timeoutMs = 30_000): Promise<{ killed: RedisServer; promoted: RedisServer }> {
    const killed = await this.masterOf(slot);
    if (!killed) throw new Error(`no master serves slot ${slot}`);
    const served = (await this.clusterNodes(killed.port)).find((node) => node.flags.includes('myself'))!.slots;
    await killed.stop();
    const promoted = await eventually(
      `a replica of ${killed.port} to take over its slots`,
      async () => {
        const owners = await Promise.all(served.map(([from]) => this.masterOf(from)));
        if (owners.some((owner) => !owner || owner === killed) || new Set(owners).size !== 1) return undefined;
        return (await this.healthy()) ? owners[0] : undefined;
      },
      timeoutMs,
    );
    return { killed, promoted };
  }

  /** Starts a killed node again: it rejoins as a replica of the master that took its place. */
  async rejoin(node: RedisServer, timeoutMs = 30_000): Promise<void> {
    await node.start();
    await eventually(
      `node ${node.port} to rejoin as a replica`,
      async () => {
        const self = (await this.clusterNodes(node.port)).find((n) => n.flags.includes('myself'));
        return !!self?.flags.includes('slave') && (await this.healthy());
      },
      timeoutMs,
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async healthy(): Promise<boolean> {
    for (const node of this.nodes.filter((n) => n.alive)) {
      const info = await this.command(node.port, 'CLUSTER', 'INFO');
      if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
      const replication = await this.command(node.port, 'INFO', 'replication');
      if (/role:slave/.test(replication) && !/master_link_status:up/.test(replication)) return false;
    }
    return true;
  }

  /** CLUSTER NODES as node `port` sees it: each node's port, flags and slot ranges. */
  private async clusterNodes(port: number): Promise<{ port: number; flags: string[]; slots: [number, number][] }[]> {
    return (await this.command(port, 'CLUSTER', 'NODES'))
      .trim()
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => {
        const [, address, flags, , , , , , ...slots] = line.split(' ');
        return {
          port: Number(address.split('@')[0].split(':').at(-1)),
          flags: flags.split(','),
          slots: slots
            .filter((range) => !range.startsWith('['))
            .map((range) => {
              const [from, to = from] = range.split('-').map(Number);
              return [from, to] as [number, number];
            }),
        };
      });
  }

  /**
   * One command on node `port` over a connection of its own ('' when the node does not answer within
   * a second: the polls above must never wait on a node that hangs).
   */
  private async command(port: number, ...args: string[]): Promise<string> {
    const client = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
      commandTimeout: 1_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return String(await client.call(args[0], ...args.slice(1)));
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
