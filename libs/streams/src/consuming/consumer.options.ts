/** Settings of a worker's Redis subscriber: its consumer's, and the limit past which it dead-letters a wake-up. */
export interface RedisSubscriberOptions {
  /** How long one blocking read waits (BZPOPMIN / XREADGROUP BLOCK). */
  blockMs: number;
  /** Streams: a pending entry idle this long (its worker died) is claimed by another worker. */
  reclaimIdleMs: number;
  /** Streams: a wake-up reclaimed after more deliveries than this is handed to the coordinator as a dead letter. */
  maxDeliveries: number;
  /** Streams: partitions per queue when the coordinator has not published its count. */
  streamPartitions: number;
}

export const DEFAULT_REDIS_SUBSCRIBER_OPTIONS: RedisSubscriberOptions = {
  blockMs: 5_000,
  reclaimIdleMs: 90_000,
  maxDeliveries: 5,
  streamPartitions: 4,
};

/**
 * How long past its BLOCK a blocking read may go unanswered before the client gives up on it. Long,
 * because the reply to a read the client gave up on is lost to it although Redis acted on it (popped
 * a wake-up, or delivered entries to this consumer); short enough to notice a read that dangles
 * across a reconnect.
 */
export const BLOCKING_GRACE_MS = 10_000;

/**
 * How often a wake-up the coordinator handed back (its queue had runs waiting, locked elsewhere) is
 * returned to Redis before it is dropped: one whose work stays locked must not circle between Redis and
 * the coordinator (the republish daemon restores the run's wake-up once it has waited long enough).
 */
export const MAX_GIVE_BACKS = 5;

/** Fisher-Yates: a fresh queue order for each blocking read, so no queue is always served last. */
export function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
