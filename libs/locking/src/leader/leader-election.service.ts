import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LOCK_SESSIONS, type LockSession, type LockSessions } from './lock-sessions';

export const LEADER_ELECTION_OPTIONS = Symbol('LEADER_ELECTION_OPTIONS');

export interface LeaderElectionOptions {
  /** How often a follower tries to take a lock, and a leader checks its session is alive. */
  checkIntervalMs: number;
}

/** A singleton daemon: started on the one coordinator that holds its lock, stopped when it loses it. */
export interface SingletonDaemon {
  readonly name: string;
  start(): void;
  stop(): void | Promise<void>;
}

/**
 * Leader election for singleton daemons with locks held by one session (LockSessions: on the coordinator,
 * PostgreSQL advisory locks on a dedicated connection). When the holding coordinator dies, its session ends
 * and frees the lock, and another coordinator's next attempt takes it. A leader that cannot reach its session (network cut,
 * database restart) stops its daemons at once, since the lock may already be someone else's.
 */
@Injectable()
export class LeaderElection implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(LeaderElection.name);
  private readonly daemons = new Map<string, { daemon: SingletonDaemon; leading: boolean }>();
  private session: LockSession | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    @Inject(LEADER_ELECTION_OPTIONS) private readonly options: LeaderElectionOptions,
    @Inject(LOCK_SESSIONS) private readonly sessions: LockSessions,
  ) {}

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
    await this.session?.end().catch(() => undefined);
    this.session = undefined;
  }

  private check(): Promise<void> {
    if (this.checking || this.stopped || this.daemons.size === 0) return this.checking ?? Promise.resolve();
    this.checking = this.checkOnce().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    try {
      this.session ??= await this.sessions.open();
      const session = this.session;
      await session.probe();
      for (const entry of this.daemons.values()) {
        if (entry.leading) continue;
        const locked = await session.tryLock(`wf-daemon:${entry.daemon.name}`);
        if (locked && !this.stopped) {
          entry.leading = true;
          this.logger.log(`leading ${entry.daemon.name}`);
          entry.daemon.start();
        }
      }
    } catch (error) {
      this.logger.warn(`leader election session failed (${(error as Error).message}); stepping down`);
      await this.stepDown();
      this.session?.end().catch(() => undefined);
      this.session = undefined;
    }
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
