/**
 * A wake-up a consumer read: the transport's word that a queue has a run to take. The worker takes a run of
 * `queue` for it at the coordinator and hands it back to the consumer to settle (ack, give back, restore);
 * each transport's own handle adds what settling it needs (a stream entry, a sorted set's key).
 */
export interface Wakeup {
  /** The queue it is for: `<workflow>:<version>[:<shard>]` (queueName). */
  readonly queue: string;
  /**
   * How the coordinator knows it: unique within its queue and stable across deliveries (a take records it
   * beside the run, a dead letter names it the same way).
   */
  readonly name: string;
}

/** A wake-up taken over from a consumer that never settled it, with how often the transport delivered it. */
export interface Reclaimed<W extends Wakeup> {
  wakeup: W;
  deliveries: number;
  /** The run it was published for, when the transport carries that (the dead letter names it). */
  runId?: string;
}

/**
 * The contract between a stream reader and the worker runtime, whatever the transport: the worker reads
 * wake-ups through it, takes runs for them at the coordinator, and settles each one here. Implemented by
 * StreamsConsumer (a consumer group: an entry stays pending until it is acknowledged, and one whose consumer
 * died is reclaimed) and SortedSetConsumer (a pop removes a wake-up: nothing to acknowledge or reclaim; the
 * coordinator's republish daemon restores what a dead worker popped).
 */
export interface Consumer<W extends Wakeup = Wakeup> {
  /**
   * Runs one call of the worker (its reads, its take at the coordinator, the settling after it). A transport
   * that keeps reads in flight between calls holds what they bring during a call for it (or for the call right
   * after it) and gives back what arrives while none is under way: a busy worker must not sit on wake-ups an
   * idle one could take.
   */
  attend<T>(call: () => Promise<T>): Promise<T>;
  /**
   * Up to `max` wake-ups left unsettled (by consumers that died, or delivered to this one by a read it never
   * saw answered), taken over for this one, with their delivery counts: the worker dead-letters those
   * delivered too often. `holding`: the wake-ups the worker holds for runs it executes (not orphaned). Looked
   * for at the transport's own pace: most calls find nothing without asking Redis.
   */
  reclaim(max: number, holding: Iterable<W>): Promise<Reclaimed<W>[]>;
  /**
   * Up to `max` new wake-ups: those at hand, else the first to arrive within the transport's block time or
   * before `signal` aborts. With `signal` aborted already it does not wait.
   */
  read(max: number, signal: AbortSignal): Promise<W[]>;
  /** Done with these: their runs ended here, or they took nothing and need not come again. */
  ack(wakeups: W[]): Promise<void>;
  /**
   * The coordinator handed these back (their queue has runs waiting, locked elsewhere at that moment): they go
   * back to the transport for another worker, counting one more hop; one past MAX_GIVE_BACKS is dropped.
   */
  giveBack(wakeups: W[]): Promise<void>;
  /**
   * The worker took no runs for these (the take failed, or a dead letter could not be handed over): they must
   * come again, unchanged. A sorted set puts them back; a group leaves them pending, to be reclaimed.
   */
  restore(wakeups: W[]): Promise<void>;
  /** Keeps wake-ups held for long runs from looking orphaned. */
  touch(wakeups: W[]): Promise<void>;
  /** Resolves when the transport answers (a worker on its HTTP backup probes it to come back). */
  probe(): Promise<void>;
  /** Stops reading, and returns what reads still in flight bring. */
  close(): Promise<void>;
}
