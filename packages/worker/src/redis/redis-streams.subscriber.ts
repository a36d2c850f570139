import { type ClaimedRun, parseRunId, type WorkflowRef, queueName } from '@nest-durable/common';
import { RedisConnection, entryKey, StreamEntries, type StreamEntry, PartitionReaders, StreamLayout } from '@app/streams';
import { Logger } from '@nestjs/common';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import type { RedisSubscriberOptions } from '@app/streams';
import type { HandOffOffers } from '../subscribers/hand-off-offers';
import { delivery, type NextDelayParams, type Subscriber } from '../subscribers/subscriber.interface';

/** Consumers idle and empty for this long are deleted (consumer names must not pile up). */
const STALE_CONSUMER_MS = 3_600_000;
/**
 * An entry pending under this worker but unknown to it is taken back only once it is this old: a
 * younger one may still be on its way (the reply of a read in flight, a give-back in progress).
 */
const ADOPT_MIN_IDLE_MS = 2_000;

/**
 * Redis Streams subscriber. Reads its queues' partition streams (see StreamLayout) in one consumer
 * group, never more entries than it has free slots: first without blocking, bounded in total, then
 * blocking, one read per partition (see PartitionReaders; entries beyond the free slots go back to
 * the group), taking what a blocking read brought at once. Each entry is a wake-up for its queue; the worker takes as many runs of each queue at
 * the coordinator, which picks them as a claim would (priority, work stealing) and says which entry
 * each run was taken with. An entry is
 * acknowledged (XACK + XDEL) once its run is done here; one that took nothing is given back when its
 * queue still has runs waiting, else acknowledged. Entries left pending are recovered: those of
 * workers that died after `reclaimIdleMs` (XAUTOCLAIM), this worker's own unseen ones at once;
 * one delivered more than `maxDeliveries` times is handed to the coordinator as a dead letter.
 */
export class RedisStreamsSubscriber implements Subscriber {
  readonly name = 'redis-streams';
  private readonly logger = new Logger(RedisStreamsSubscriber.name);
  private readonly refs = new Map<string, WorkflowRef>();
  private readonly layout: StreamLayout;
  private readonly entries: StreamEntries;
  private readonly readers: PartitionReaders;
  /** The entry behind each taken run, by run id and the revision it was taken at. */
  private readonly held = new Map<string, StreamEntry>();
  private lastRecovery = 0;
  private lastConsumerCleanup = Date.now();
  /** Set when a blocking read was given up by the client: Redis may have delivered entries it never saw. */
  private orphansSuspected = false;
  /** Wake-ups that took no run. */
  stale = 0;
  deadLettered = 0;

  constructor(
    redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
    consumer: string,
    private readonly offers?: HandOffOffers,
  ) {
    for (const ref of registry.refs()) this.refs.set(queueName(ref.name, ref.version, ref.shard), ref);
    this.layout = new StreamLayout(redis, [...this.refs.keys()], options.streamPartitions);
    this.entries = new StreamEntries(redis, consumer);
    this.readers = new PartitionReaders(redis, this.entries, consumer, options.blockMs);
  }

  /** The partition streams read now. */
  get readStreams(): readonly string[] {
    return this.layout.streams;
  }

  getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    return this.offers ? this.offers.around(limit, signal, (free, stop) => this.read(free, stop)) : this.read(limit, signal);
  }

  /** Takes runs for the entries it finds (recovered, arrived, available, or brought by a blocking read). */
  private async read(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    await this.entries.whenReady();
    return this.readers.attend(async () => {
      try {
        await this.layout.follow();
        const found = await this.recover(limit);
        found.push(...this.readers.take(limit - found.length));
        found.push(...(await this.entries.readAvailable(this.layout.byPartition, limit - found.length)));
        if (found.length === 0) {
          const { entries, givenUp } = await this.readers.next(this.layout.byPartition, limit, signal);
          this.orphansSuspected ||= givenUp;
          if (entries.length === 0) {
            this.layout.recheck(); // nothing came: look for partitions this worker does not read yet
            return [];
          }
          // Taken at once: a read of the other partitions to fill the batch first would cost every start out of
          // an idle worker a round trip (0.5 ms). What else is waiting, the next call (right after this one,
          // with the slots still free) reads without blocking.
          found.push(...entries);
        }
        return await this.take(found);
      } catch (error) {
        if (String((error as Error).message).includes('NOGROUP')) {
          this.layout.lost(); // the streams or groups vanished (FLUSHALL, a new Redis, a failover that lost them): recreate them
          return [];
        }
        throw error;
      }
    });
  }

  getNextDelay(params: NextDelayParams): number {
    return params.type === 'no_work' ? 0 : Math.min(5_000, 100 * 2 ** params.attempt);
  }

  /** Keeps the entry of a long-running run from looking abandoned (resets its idle time). */
  async heartbeat(runId: string, revision: number): Promise<void> {
    const entry = this.held.get(delivery(runId, revision));
    if (entry) await this.entries.touch([entry]);
  }

  /** Acknowledges the entry behind this taking of the run (not one of a later taking). */
  async acknowledge(runId: string, revision: number): Promise<void> {
    const entry = this.held.get(delivery(runId, revision));
    this.held.delete(delivery(runId, revision));
    if (entry) await this.entries.ack([entry]);
  }

  async probe(): Promise<void> {
    await this.entries.whenReady();
  }

  async close(): Promise<void> {
    await this.offers?.close();
    await this.readers.close();
  }

  /**
   * Entries left pending, recovered at the reclaim pace (half the idle time, at most 5 s): this
   * worker's own that it never saw (a read given up: also at once), then those of consumers idle past
   * reclaimIdleMs. Those delivered more than maxDeliveries times become dead letters.
   */
  private async recover(limit: number): Promise<StreamEntry[]> {
    const now = Date.now();
    const due = now - this.lastRecovery >= Math.min(this.options.reclaimIdleMs / 2, 5_000);
    if (!due && !this.orphansSuspected) return [];
    const streams = this.layout.streams;
    const known = new Set([...this.held.values()].map(entryKey));
    const found = await this.entries.adopt(streams, known, limit, ADOPT_MIN_IDLE_MS);
    if (found.length > 0) this.logger.warn(`took back ${found.length} entries delivered to this worker by a read it never saw answered`);
    this.orphansSuspected = false;
    if (due) {
      this.lastRecovery = now;
      const { entries, deleted } = await this.entries.reclaim(streams, this.options.reclaimIdleMs, limit - found.length);
      if (deleted > 0) this.logger.warn(`${deleted} pending entries were deleted from their streams; republish restores their runs`);
      found.push(...entries);
      if (now - this.lastConsumerCleanup >= STALE_CONSUMER_MS) {
        this.lastConsumerCleanup = now;
        await this.entries.deleteIdleConsumers(streams, STALE_CONSUMER_MS);
      }
    }
    return found.length === 0 ? found : this.deadLetterOverDelivered(found);
  }

  /**
   * Entries delivered more than maxDeliveries times (the workers that took them kept stopping) go to
   * the coordinator as dead letters, which fails the run each last took as `stalled` if that claim
   * went idle; then they are acknowledged. One the coordinator could not take stays pending, to be
   * handed over on a later recovery.
   */
  private async deadLetterOverDelivered(found: StreamEntry[]): Promise<StreamEntry[]> {
    const counts = await this.entries.deliveryCounts(found);
    const keep: StreamEntry[] = [];
    for (const [i, entry] of found.entries()) {
      if (counts[i] <= this.options.maxDeliveries) {
        keep.push(entry);
        continue;
      }
      const runId = runIdOf(entry.fields);
      try {
        await this.api.reportDeadLetter({
          workflow: this.refs.get(this.layout.queueOf(entry.stream))!,
          wakeup: this.wakeupName(entry),
          ...(runId ? { runId } : {}),
          deliveries: counts[i],
        });
      } catch (error) {
        this.logger.warn(`could not hand entry ${entry.id} of ${entry.stream} to the coordinator as a dead letter: ${(error as Error).message}`);
        continue;
      }
      this.deadLettered++;
      await this.entries.ack([entry]);
      this.logger.warn(`entry ${entry.id} of ${entry.stream} was delivered ${counts[i]} times; dead-lettered`, { runId });
    }
    return keep;
  }

  /**
   * Takes, per queue, one run per entry read for it. Each run taken keeps the entry it was taken with
   * (its acknowledgement waits for the run to end here); entries the coordinator hands back go back
   * to the group, the rest are acknowledged now.
   */
  private async take(found: StreamEntry[]): Promise<ClaimedRun[]> {
    const byName = new Map<string, StreamEntry>();
    const wakeups = new Map<string, string[]>();
    for (const entry of found) {
      const queue = this.layout.queueOf(entry.stream);
      const name = this.wakeupName(entry);
      // Found twice (taken back while its read's reply was on its way): a wake-up is named once.
      if (byName.has(`${queue}\u0000${name}`)) continue;
      byName.set(`${queue}\u0000${name}`, entry);
      wakeups.set(queue, [...(wakeups.get(queue) ?? []), name]);
    }
    const { runs, requeue } = await this.api.take([...wakeups].map(([queue, names]) => ({ ...this.refs.get(queue)!, wakeups: names })));
    const take = (queue: string, name: string) => {
      const entry = byName.get(`${queue}\u0000${name}`);
      byName.delete(`${queue}\u0000${name}`);
      return entry;
    };
    for (const run of runs) {
      const entry = run.wakeup === undefined ? undefined : take(run.queue, run.wakeup);
      if (entry) this.held.set(delivery(run.id, run.revision), entry);
    }
    const giveBack = requeue.flatMap(({ queue, wakeup }) => take(queue, wakeup) ?? []);
    const done = [...byName.values()];
    this.stale += done.length;
    try {
      await this.entries.giveBack(giveBack);
      await this.entries.ack(done);
    } catch (error) {
      // The runs are this worker's now: they must start. Entries left pending are recovered later.
      this.logger.warn(`could not give back or acknowledge entries after a take: ${(error as Error).message}`);
    }
    return runs;
  }

  /** How the coordinator knows an entry: its partition and id (unique within its queue). */
  private wakeupName(entry: StreamEntry): string {
    return `${this.layout.partitionOf(entry.stream)}/${entry.id}`;
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
