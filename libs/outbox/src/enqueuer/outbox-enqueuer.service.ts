import { type Publisher, PUBLISHER } from '@app/streams';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { NotificationListener, type PendingWait } from '../notifications/notification-listener.service';
import { OUTBOX_CHANNEL, OUTBOX_OPTIONS, type OutboxOptions } from './outbox.constants';
import { OutboxRepository, type OutboxRow } from './outbox.repository';

/** Counters for the metrics endpoint. */
export interface OutboxCounters {
  processed: number;
  failed: number;
  deadLettered: number;
  inFlight: number;
}

/**
 * Publishes committed outbox rows. Woken by NOTIFY the moment a transaction that wrote rows commits
 * (but for starts, which publish their own rows through publishTaken), and by publishDue() when rows
 * written for later come due (the poll is the safety net, and finds publish retries that came due);
 * goes straight on when a batch was full. Several coordinators may run it at once: rows are claimed
 * with SKIP LOCKED.
 */
@Injectable()
export class OutboxEnqueuer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxEnqueuer.name);
  private readonly loops: Promise<void>[] = [];
  private readonly waits = new Set<PendingWait>();
  /** publishTaken calls under way (awaited on shutdown). */
  private readonly publishing = new Set<Promise<unknown>>();
  private stopped = false;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  readonly counters: OutboxCounters = { processed: 0, failed: 0, deadLettered: 0, inFlight: 0 };

  constructor(
    private readonly repository: OutboxRepository,
    @Inject(PUBLISHER) private readonly publisher: Publisher,
    private readonly listener: NotificationListener,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxOptions,
  ) {}

  onApplicationBootstrap(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop());
    this.maintenanceTimer = setInterval(() => void this.maintain(), this.options.maintenanceIntervalMs);
    this.logger.log(`publishing the outbox to ${this.publisher.name} (batch ${this.options.batchSize})`);
  }

  /** Stops claiming and lets batches and starts' publishes in progress finish, so none is left in_flight. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.maintenanceTimer);
    for (const wait of this.waits) wait.cancel();
    await Promise.all(this.loops);
    await Promise.all(this.publishing);
  }

  /** Rows came due now: wakes one batch loop (it goes on by itself while batches come back full). */
  publishDue(): void {
    this.listener.wake(OUTBOX_CHANNEL, '', 1);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      // Armed before the batch: a commit during the batch wakes the next iteration.
      const wake = this.listener.waitFor(OUTBOX_CHANNEL, () => true, this.options.pollIntervalMs);
      let claimed = 0;
      try {
        claimed = await this.processBatch();
      } catch (error) {
        this.logger.error(`outbox batch failed: ${(error as Error).message}`);
      }
      if (claimed >= this.options.batchSize || this.stopped) {
        wake.cancel();
        continue;
      }
      this.waits.add(wake);
      await wake.notified;
      this.waits.delete(wake);
    }
  }

  /** Claims a batch, publishes it, deletes what was sent and reschedules or dead-letters the rest. */
  async processBatch(): Promise<number> {
    const rows = await this.repository.claimBatch(this.options.batchSize);
    if (rows.length > 0) await this.publishTaken(rows);
    return rows.length;
  }

  /**
   * Publishes rows already marked in_flight (by a batch statement, or by the start that wrote them: see
   * RunControlRepository.start), deletes what was sent and reschedules or dead-letters the rest. Rows it
   * cannot settle stay in_flight, for maintenance to return to retry.
   */
  async publishTaken(rows: OutboxRow[]): Promise<void> {
    const publish = this.publish(rows);
    const settled = publish.catch(() => undefined);
    this.publishing.add(settled);
    try {
      await publish;
    } finally {
      this.publishing.delete(settled);
    }
  }

  private async publish(rows: OutboxRow[]): Promise<void> {
    this.counters.inFlight += rows.length;
    try {
      const results = await this.publisher.publish(rows.map(({ id, runId, queue }) => ({ id, runId, queue })));
      const sent: string[] = [];
      const retries: { id: string; delayMs: number; error: string }[] = [];
      const dead: { id: string; error: string }[] = [];
      for (const [i, row] of rows.entries()) {
        const error = results[i];
        if (!error) sent.push(row.id);
        else if (row.attemptCount >= this.options.maxRetries) dead.push({ id: row.id, error: error.message });
        else retries.push({ id: row.id, delayMs: this.retryDelay(row), error: error.message });
      }
      await this.repository.removeSent(sent);
      await this.repository.scheduleRetries(retries);
      await this.repository.deadLetter(dead);
      this.counters.processed += sent.length;
      this.counters.failed += retries.length + dead.length;
      this.counters.deadLettered += dead.length;
      if (retries.length + dead.length > 0) {
        this.logger.warn(`${retries.length + dead.length} of ${rows.length} outbox rows failed to publish (${dead.length} dead-lettered)`);
      }
    } finally {
      this.counters.inFlight -= rows.length;
    }
  }

  /** Exponential backoff with full jitter: a random wait below base * 2^(attempt-1), capped. */
  private retryDelay(row: OutboxRow): number {
    const cap = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** (row.attemptCount - 1));
    return Math.round(Math.random() * cap);
  }

  /**
   * Publishes now the rows waiting out a retry's delay (the transport is back after an outage: the delay,
   * grown to OUTBOX_RETRY_MAX_MS over a long one, would hold their wake-ups back that long after it ended).
   */
  async retryNow(): Promise<void> {
    const due = await this.repository.retryNow();
    if (due > 0) this.logger.log(`retrying ${due} outbox rows now`);
    this.publishDue();
  }

  private async maintain(): Promise<void> {
    try {
      const recovered = await this.repository.recoverStaleInFlight(this.options.staleInFlightMs);
      if (recovered > 0) this.logger.warn(`returned ${recovered} stale in-flight outbox rows to retry`);
      await this.repository.deleteSentOlderThan(this.options.staleInFlightMs);
    } catch (error) {
      this.logger.warn(`outbox maintenance failed: ${(error as Error).message}`);
    }
  }
}
