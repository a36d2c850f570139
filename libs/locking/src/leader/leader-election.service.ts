import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';

export const LEADER_ELECTION_OPTIONS = Symbol('LEADER_ELECTION_OPTIONS');

export interface LeaderElectionOptions {
  url: string;
  /** application_name of the election session. */
  applicationName: string;
  /** How often a follower tries to take a lock, and a leader checks its session is alive. */
  checkIntervalMs: number;
}

/** A singleton daemon: started on the one coordinator that holds its lock, stopped when it loses it. */
export interface SingletonDaemon {
  readonly name: string;
  start(): void;
  stop(): void | Promise<void>;
}

const PROBE_TIMEOUT_MS = 5_000;

/**
 * Leader election for singleton daemons with session-level advisory locks held on one dedicated
 * connection. When the holding coordinator dies, PostgreSQL ends its session and frees the lock, and
 * another coordinator's next attempt takes it. A leader that cannot reach its session (network cut,
 * database restart) stops its daemons at once, since the lock may already be someone else's.
 */
@Injectable()
export class LeaderElection implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(LeaderElection.name);
  private readonly daemons = new Map<string, { daemon: SingletonDaemon; leading: boolean }>();
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;

  constructor(@Inject(LEADER_ELECTION_OPTIONS) private readonly options: LeaderElectionOptions) {}

  register(daemon: SingletonDaemon): void {
    this.daemons.set(daemon.name, { daemon, leading: false });
  }

  /** Names of the daemons this process leads now. */
  get leading(): string[] {
    return [...this.daemons.values()].filter((entry) => entry.leading).map((entry) => entry.daemon.name);
  }

  /** After every module's init, so the daemons registered there are contended for at once, not a check later. */
  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.check(), this.options.checkIntervalMs);
    void this.check();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.checking;
    await this.stepDown();
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }

  private check(): Promise<void> {
    if (this.checking || this.stopped || this.daemons.size === 0) return this.checking ?? Promise.resolve();
    this.checking = this.checkOnce().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    try {
      const client = await this.session();
      await withTimeout(client.query('SELECT 1'), PROBE_TIMEOUT_MS);
      for (const entry of this.daemons.values()) {
        if (entry.leading) continue;
        const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [`wf-daemon:${entry.daemon.name}`]);
        if (rows[0].locked && !this.stopped) {
          entry.leading = true;
          this.logger.log(`leading ${entry.daemon.name}`);
          entry.daemon.start();
        }
      }
    } catch (error) {
      this.logger.warn(`leader election session failed (${(error as Error).message}); stepping down`);
      await this.stepDown();
      this.client?.end().catch(() => undefined);
      this.client = undefined;
    }
  }

  private async session(): Promise<Client> {
    if (this.client) return this.client;
    const client = new Client({
      connectionString: this.options.url,
      application_name: this.options.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    client.on('error', () => undefined); // surfaced by the next probe
    await client.connect();
    this.client = client;
    return client;
  }

  private async stepDown(): Promise<void> {
    for (const entry of this.daemons.values()) {
      if (!entry.leading) continue;
      entry.leading = false;
      this.logger.log(`no longer leading ${entry.daemon.name}`);
      await entry.daemon.stop();
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
