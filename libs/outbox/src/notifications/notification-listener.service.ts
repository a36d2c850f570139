import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { listen, PrimaryLocator, probeListenSession, sessionExecutor } from '@app/persistence';
import type { Client } from 'pg';
import { NOTIFICATION_LISTENER_OPTIONS, type NotificationListenerOptions } from './notification.constants';

interface Waiter {
  matches: (payload: string) => boolean;
  wake: (notified: boolean) => void;
}

/** Hears every notification on a channel, for as long as it stays subscribed. */
export interface ChannelSubscriber {
  notified(payload: string): void;
  /** The session (re)connected: notifications sent while it was down are lost, so re-read the state. */
  reconnected(): void;
}

export interface PendingWait {
  /** Resolves true when a matching notification (or a reconnect) arrived, false on timeout or cancel. */
  readonly notified: Promise<boolean>;
  cancel(): void;
}

const PROBE_TIMEOUT_MS = 5_000;
const MAX_RECONNECT_DELAY_MS = 5_000;

/**
 * Holds one dedicated PostgreSQL session on LISTEN and hands notifications to in-process waiters.
 *
 * NOTIFY is delivered only at commit and never replayed after a reconnect, so every (re)connect
 * wakes all waiters: they re-check the database and a lost notification costs a query, never a
 * stuck wait. A half-open socket can stay silent without an error, so the session is probed with a
 * round trip and replaced when the probe fails.
 */
@Injectable()
export class NotificationListener implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(NotificationListener.name);
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly subscribers = new Map<string, Set<ChannelSubscriber>>();
  /** Notifications heard and in-process wake-ups, by channel (see heard()). */
  private readonly heardOn = new Map<string, number>();
  /** Times the session (re)connected: each may have lost notifications on every channel. */
  private connects = 0;
  private client: Client | undefined;
  private connected = false;
  private stopped = false;
  private reconnectDelayMs = 100;
  private probeTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(NOTIFICATION_LISTENER_OPTIONS) private readonly options: NotificationListenerOptions,
    private readonly primary: PrimaryLocator,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.connect();
    this.probeTimer = setInterval(() => void this.probe(), this.options.probeIntervalMs);
    this.probeTimer.unref();
  }

  /** Before the HTTP server drains: release every long-poll so in-flight requests can finish. */
  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearInterval(this.probeTimer);
    clearTimeout(this.reconnectTimer);
    this.wakeAll(false);
  }

  async onApplicationShutdown(): Promise<void> {
    this.beforeApplicationShutdown();
    await this.client?.end().catch(() => undefined);
  }

  /** True once the app is shutting down: waits return false at once, so long-polls should return. */
  get isClosed(): boolean {
    return this.stopped;
  }

  /** Whether the LISTEN session is currently up (for health checks). */
  get isListening(): boolean {
    return this.connected;
  }

  /**
   * Waits up to `timeoutMs` for a notification on `channel` whose payload matches. Arm the wait
   * before checking the database, then await it only if the check found nothing: a notification
   * that lands between the two is not missed.
   */
  waitFor(channel: string, matches: (payload: string) => boolean, timeoutMs: number): PendingWait {
    let waiter!: Waiter;
    let timer: NodeJS.Timeout | undefined;
    const set = this.waitersOf(channel);
    const notified = new Promise<boolean>((resolve) => {
      waiter = {
        matches,
        wake: (value) => {
          clearTimeout(timer);
          set.delete(waiter);
          resolve(value);
        },
      };
    });
    if (this.stopped) {
      waiter.wake(false);
    } else {
      set.add(waiter);
      timer = setTimeout(() => waiter.wake(false), timeoutMs);
    }
    return { notified, cancel: () => waiter.wake(false) };
  }

  /**
   * A count that moves whenever something on `channel` may have happened: a notification heard, an
   * in-process wake-up, a (re)connect of the session. The same value at two moments means nothing was
   * announced on the channel in between (a commit still on its way is announced later, as ever).
   * Undefined while the session is down: notifications are being lost, so nothing can be known.
   */
  heard(channel: string): number | undefined {
    return this.connected ? (this.heardOn.get(channel) ?? 0) + this.connects : undefined;
  }

  /** Subscribes to every notification on `channel` (one of the channels LISTENed to); returns the unsubscribe. */
  subscribe(channel: string, subscriber: ChannelSubscriber): () => void {
    let set = this.subscribers.get(channel);
    if (!set) {
      set = new Set();
      this.subscribers.set(channel, set);
    }
    set.add(subscriber);
    return () => set.delete(subscriber);
  }

  /**
   * An in-process notification: wakes up to `max` waiters on `channel` whose payload matches,
   * those waiting longest first (a waiter re-arms before each check, so the longest waiting are the
   * ones idle now). Returns how many woke.
   */
  wake(channel: string, payload: string, max: number): number {
    this.count(channel);
    let woken = 0;
    // A Set iterates in insertion order, and deleting the entry being visited is safe.
    for (const waiter of this.waiters.get(channel) ?? []) {
      if (woken >= max) break;
      if (!waiter.matches(payload)) continue;
      waiter.wake(true);
      woken++;
    }
    return woken;
  }

  private waitersOf(channel: string): Set<Waiter> {
    let set = this.waiters.get(channel);
    if (!set) {
      set = new Set();
      this.waiters.set(channel, set);
    }
    return set;
  }

  private count(channel: string): void {
    this.heardOn.set(channel, (this.heardOn.get(channel) ?? 0) + 1);
  }

  private dispatch(channel: string, payload: string): void {
    this.count(channel);
    for (const subscriber of this.subscribers.get(channel) ?? []) subscriber.notified(payload);
    for (const waiter of [...(this.waiters.get(channel) ?? [])]) {
      if (waiter.matches(payload)) waiter.wake(true);
    }
  }

  private wakeAll(value: boolean): void {
    for (const set of this.waiters.values()) {
      for (const waiter of [...set]) waiter.wake(value);
    }
  }

  private async connect(): Promise<void> {
    // On the primary: after a failover, the reconnect finds the promoted standby.
    const client = new this.primary.Client({
      connectionString: this.primary.connectionString,
      application_name: this.options.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    client.on('notification', (message) => this.dispatch(message.channel, message.payload ?? ''));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    this.client = client;
    try {
      await client.connect();
      for (const channel of this.options.channels) await listen(sessionExecutor(client), channel);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (client !== this.client) return;
    this.connected = true;
    this.reconnectDelayMs = 100;
    this.connects++;
    // Anything committed while we were not listening went unannounced: let every waiter re-check.
    this.wakeAll(true);
    for (const set of this.subscribers.values()) for (const subscriber of set) subscriber.reconnected();
  }

  private lost(client: Client, error: Error): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    this.connected = false;
    this.logger.warn(`LISTEN session lost (${error.message}); reconnecting in ${this.reconnectDelayMs} ms`);
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectDelayMs);
    this.reconnectTimer.unref();
    this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, MAX_RECONNECT_DELAY_MS);
  }

  private async probe(): Promise<void> {
    const client = this.client;
    if (!client || !this.connected) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        // The named probe last, so that it stays the session's last statement in pg_stat_activity.
        this.primary.confirm(client).then(() => probeListenSession(sessionExecutor(client))),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`probe got no answer in ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      this.lost(client, error as Error);
    } finally {
      clearTimeout(timer);
    }
  }
}
