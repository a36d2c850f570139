import { CONSUMER_GROUP } from '../naming/stream-keys';
import { Logger } from '@nestjs/common';
import { type RedisClient, RedisConnection } from '../connection/redis.connection';
import { BLOCKING_GRACE_MS, shuffled } from './consumer.options';
import type { RawEntry, StreamEntries, StreamEntry } from './stream-entries';

/**
 * The blocking half of a Streams consumer: one `XREADGROUP … BLOCK` per partition, each on a
 * connection of its own (see RedisConnection.open). A command may name keys of one hash slot only
 * (in a Redis Cluster), and partition n of every queue shares one (see streamKey), so one read per
 * partition covers all of the worker's queues. The reads run side by side and stay in flight between
 * calls; `next` waits for the first that brings entries. What a read brings while no call is under way
 * (the worker is busy, on its HTTP backup, or stopping) goes back to the group at once: a busy worker
 * must not sit on wake-ups an idle one could take.
 */
export class PartitionReaders {
  private readonly logger = new Logger(PartitionReaders.name);
  private readonly connections: RedisClient[] = [];
  /** The read in flight per partition (these promises never reject). */
  private readonly inFlight = new Map<number, Promise<void>>();
  /** Entries brought by reads that ended, not handed out yet. */
  private readonly arrived: StreamEntry[] = [];
  private failure: Error | undefined;
  private givenUp = false;
  private attended = false;
  private closed = false;
  private onChange: (() => void) | undefined;

  constructor(
    private readonly redis: RedisConnection,
    private readonly entries: StreamEntries,
    private readonly consumer: string,
    private readonly blockMs: number,
  ) {}

  /** Runs one call of the subscriber: entries arriving meanwhile wait for it; after it, those left go back. */
  async attend<T>(call: () => Promise<T>): Promise<T> {
    this.attended = true;
    try {
      return await call();
    } finally {
      this.attended = false;
      this.releaseSoon();
    }
  }

  /** Up to `max` of the entries that arrived since the last call (the others stay). */
  take(max: number): StreamEntry[] {
    return this.arrived.splice(0, Math.max(0, max));
  }

  /**
   * Waits until reads bring entries, blockMs passes or `signal` aborts, keeping a read in flight on
   * every partition meanwhile, and returns at most `limit` of what they brought (the rest goes back).
   * `givenUp`: the client gave a read up (no answer within the grace), so Redis may have delivered
   * entries it never saw. Throws when a read failed and none brought anything.
   */
  async next(byPartition: readonly (readonly string[])[], limit: number, signal: AbortSignal): Promise<{ entries: StreamEntry[]; givenUp: boolean }> {
    const deadline = Date.now() + this.blockMs;
    this.failure = undefined;
    for (;;) {
      for (const [partition, streams] of byPartition.entries()) this.start(partition, streams);
      if (this.arrived.length > 0 || this.failure || signal.aborted || Date.now() >= deadline) break;
      await this.change(deadline, signal);
    }
    const entries = this.arrived.splice(0);
    const { failure, givenUp } = this;
    this.failure = undefined;
    this.givenUp = false;
    if (entries.length === 0 && failure) throw failure;
    await this.entries.putBack(entries.splice(limit));
    return { entries, givenUp };
  }

  /** Stops reading: waits for the reads in flight to end (a dangling one not past its block) and gives back what they brought. */
  async close(): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.inFlight.values()), new Promise((resolve) => (timer = setTimeout(resolve, this.blockMs + 1_000)))]);
    clearTimeout(timer);
    await this.entries.putBack(this.arrived.splice(0)).catch(() => undefined);
  }

  private start(partition: number, streams: readonly string[]): void {
    if (this.closed || this.inFlight.has(partition) || streams.length === 0) return;
    const read = this.read(partition, streams)
      .then(
        ({ entries, givenUp }) => {
          this.arrived.push(...entries);
          this.givenUp ||= givenUp;
        },
        (error: Error) => {
          this.failure = error;
        },
      )
      .finally(() => {
        this.inFlight.delete(partition);
        this.releaseSoon();
        this.onChange?.();
      });
    this.inFlight.set(partition, read);
  }

  private async read(partition: number, streams: readonly string[]): Promise<{ entries: StreamEntry[]; givenUp: boolean }> {
    // A client-side guard longer than the BLOCK ends a read that never returns (across a reconnect or a failover).
    this.connections[partition] ??= this.redis.open(`stream reader ${partition}`, { blockingTimeout: this.blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
    const connection = this.connections[partition];
    await this.redis.whenReady(connection);
    const order = shuffled([...streams]);
    const startedAt = Date.now();
    // COUNT 1: at most one entry per stream; entries beyond the caller's free slots go back.
    const reply = (await connection.xreadgroup(
      'GROUP',
      CONSUMER_GROUP,
      this.consumer,
      'COUNT',
      1,
      'BLOCK',
      this.blockMs,
      'STREAMS',
      ...order,
      ...order.map(() => '>'),
    )) as [string, RawEntry[]][] | null;
    return {
      entries: (reply ?? []).flatMap(([stream, list]) => list.map(([id, fields]) => ({ stream, id, fields }))),
      givenUp: !reply && Date.now() - startedAt >= this.blockMs + BLOCKING_GRACE_MS,
    };
  }

  /** Resolves when a read ends, at `deadline`, or when `signal` aborts. */
  private change(deadline: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.onChange = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
      signal.addEventListener('abort', done, { once: true });
      this.onChange = done;
    });
  }

  /**
   * Gives back what arrived while no call is under way, a moment later: the worker calls again right
   * after a call that left it free slots, so only a busy (or stopping) worker gives anything back.
   */
  private releaseSoon(): void {
    setImmediate(() => {
      if (this.attended || this.arrived.length === 0) return;
      this.entries.putBack(this.arrived.splice(0)).catch((error: Error) => {
        this.logger.warn(`could not give back entries read while busy (they are reclaimed later): ${error.message}`);
      });
    });
  }
}
