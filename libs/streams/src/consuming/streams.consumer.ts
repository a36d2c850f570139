import { parseRunId } from '@nest-durable/common';
import { Logger } from '@nestjs/common';
import type { RedisConnection } from '../connection/redis.connection';
import type { Consumer, Reclaimed, Wakeup } from './consumer.interface';
import type { RedisSubscriberOptions } from './consumer.options';
import { PartitionReaders } from './partition-readers';
import { entryKey, StreamEntries, type StreamEntry } from './stream-entries';
import { StreamLayout } from './stream-layout';

/** Consumers idle and empty for this long are deleted (consumer names must not pile up). */
const STALE_CONSUMER_MS = 3_600_000;
/**
 * An entry pending under this worker but unknown to it is taken back only once it is this old: a
 * younger one may still be on its way (the reply of a read in flight, a give-back in progress).
 */
const ADOPT_MIN_IDLE_MS = 2_000;

/** A wake-up read from a partition stream: named by its partition and entry id (unique within its queue). */
export interface StreamWakeup extends Wakeup {
  readonly entry: StreamEntry;
}

/**
 * The Redis Streams consumer: reads its queues' partition streams (see StreamLayout) in one consumer group,
 * never more entries than asked for: first without blocking, bounded in total, then blocking, one read per
 * partition (see PartitionReaders; entries beyond the free slots go back to the group). An entry stays
 * pending until it is acknowledged (XACK + XDEL). Entries left pending are recovered: those of workers that
 * died after `reclaimIdleMs` (XAUTOCLAIM), this worker's own unseen ones (a read it gave up on) at once.
 * Streams or groups that vanished (NOGROUP: a FLUSHALL, a new Redis) are recreated.
 */
export class StreamsConsumer implements Consumer<StreamWakeup> {
  private readonly logger = new Logger(StreamsConsumer.name);
  private readonly layout: StreamLayout;
  private readonly entries: StreamEntries;
  private readonly readers: PartitionReaders;
  private lastRecovery = 0;
  private lastConsumerCleanup = Date.now();
  /** Set when a blocking read was given up by the client: Redis may have delivered entries it never saw. */
  private orphansSuspected = false;

  constructor(
    redis: RedisConnection,
    queues: readonly string[],
    consumer: string,
    private readonly options: Pick<RedisSubscriberOptions, 'blockMs' | 'reclaimIdleMs' | 'streamPartitions'>,
  ) {
    this.layout = new StreamLayout(redis, [...queues], options.streamPartitions);
    this.entries = new StreamEntries(redis, consumer);
    this.readers = new PartitionReaders(redis, this.entries, consumer, options.blockMs);
  }

  /** The partition streams read now. */
  get readStreams(): readonly string[] {
    return this.layout.streams;
  }

  attend<T>(call: () => Promise<T>): Promise<T> {
    return this.readers.attend(call);
  }

  /**
   * Entries left pending, recovered at the reclaim pace (half the idle time, at most 5 s): this worker's
   * own that it never saw (a read given up: also at once), then those of consumers idle past reclaimIdleMs.
   */
  async reclaim(max: number, holding: Iterable<StreamWakeup>): Promise<Reclaimed<StreamWakeup>[]> {
    await this.entries.whenReady();
    return this.recreatingLostGroups(async () => {
      await this.layout.follow();
      const now = Date.now();
      const due = now - this.lastRecovery >= Math.min(this.options.reclaimIdleMs / 2, 5_000);
      if (!due && !this.orphansSuspected) return [];
      const streams = this.layout.streams;
      const known = new Set([...holding].map(({ entry }) => entryKey(entry)));
      const found = await this.entries.adopt(streams, known, max, ADOPT_MIN_IDLE_MS);
      if (found.length > 0) this.logger.warn(`took back ${found.length} entries delivered to this worker by a read it never saw answered`);
      this.orphansSuspected = false;
      if (due) {
        this.lastRecovery = now;
        const { entries, deleted } = await this.entries.reclaim(streams, this.options.reclaimIdleMs, max - found.length);
        if (deleted > 0) this.logger.warn(`${deleted} pending entries were deleted from their streams; republish restores their runs`);
        found.push(...entries);
        if (now - this.lastConsumerCleanup >= STALE_CONSUMER_MS) {
          this.lastConsumerCleanup = now;
          await this.entries.deleteIdleConsumers(streams, STALE_CONSUMER_MS);
        }
      }
      if (found.length === 0) return [];
      const counts = await this.entries.deliveryCounts(found);
      return found.map((entry, i) => {
        const runId = runIdOf(entry.fields);
        return { wakeup: this.wakeupOf(entry), deliveries: counts[i], ...(runId ? { runId } : {}) };
      });
    });
  }

  /**
   * Entries that arrived since the last call, then those available (without blocking), and only when there
   * are none a blocking read: what it brings is returned at once (a read of the other partitions to fill
   * the batch first would cost every start out of an idle worker a round trip, 0.5 ms; the next call, right
   * after this one with the slots still free, reads what else is waiting without blocking).
   */
  async read(max: number, signal: AbortSignal): Promise<StreamWakeup[]> {
    await this.entries.whenReady();
    return this.recreatingLostGroups(async () => {
      await this.layout.follow();
      const found = this.readers.take(max);
      found.push(...(await this.entries.readAvailable(this.layout.byPartition, max - found.length)));
      if (found.length === 0 && !signal.aborted) {
        const { entries, givenUp } = await this.readers.next(this.layout.byPartition, max, signal);
        this.orphansSuspected ||= givenUp;
        if (entries.length === 0) this.layout.recheck(); // nothing came: look for partitions this worker does not read yet
        found.push(...entries);
      }
      return found.map((entry) => this.wakeupOf(entry));
    });
  }

  async ack(wakeups: StreamWakeup[]): Promise<void> {
    await this.entries.ack(wakeups.map(({ entry }) => entry));
  }

  async giveBack(wakeups: StreamWakeup[]): Promise<void> {
    await this.entries.giveBack(wakeups.map(({ entry }) => entry));
  }

  /** Left pending: the worker recovers them later (the take may have gone through: its runs are then taken over). */
  async restore(_wakeups: StreamWakeup[]): Promise<void> {}

  /** Resets the idle time of entries held for long runs, so no other worker reclaims them. */
  async touch(wakeups: StreamWakeup[]): Promise<void> {
    await this.entries.touch(wakeups.map(({ entry }) => entry));
  }

  async probe(): Promise<void> {
    await this.entries.whenReady();
  }

  async close(): Promise<void> {
    await this.readers.close();
  }

  private wakeupOf(entry: StreamEntry): StreamWakeup {
    return { queue: this.layout.queueOf(entry.stream), name: `${this.layout.partitionOf(entry.stream)}/${entry.id}`, entry };
  }

  /** Nothing, when the streams or groups vanished (FLUSHALL, a new Redis, a failover that lost them): the next follow recreates them. */
  private async recreatingLostGroups<T>(read: () => Promise<T[]>): Promise<T[]> {
    try {
      return await read();
    } catch (error) {
      if (!String((error as Error).message).includes('NOGROUP')) throw error;
      this.layout.lost();
      return [];
    }
  }
}

/** The run an entry was published for, if it names a valid one. */
function runIdOf(fields: string[]): string | undefined {
  for (let i = 0; i < fields.length - 1; i += 2) {
    if (fields[i] !== 'run') continue;
    try {
      return parseRunId(fields[i + 1]);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
