/** Settings shared by the Redis subscribers. */
export interface RedisSubscriberOptions {
  /** How long one blocking read waits (BZPOPMIN / XREADGROUP BLOCK). */
  blockMs: number;
  /** Streams: a pending message idle this long (its worker died) is claimed by another worker. */
  claimMinIdleTimeMs: number;
  /** Streams: a message delivered more often than this is moved to the dead-letter stream. */
  maxDeliveries: number;
  /** Streams: partitions per queue when the coordinator has not published its count. */
  partitionsFallback: number;
}

export const DEFAULT_REDIS_SUBSCRIBER_OPTIONS: RedisSubscriberOptions = {
  blockMs: 5_000,
  claimMinIdleTimeMs: 90_000,
  maxDeliveries: 5,
  partitionsFallback: 4,
};

/**
 * How long past its BLOCK a blocking read may go unanswered before the client gives up on it. Long,
 * because the reply to a read the client gave up on is lost to it although Redis acted on it (popped
 * a wake-up, or delivered entries to this consumer); short enough to notice a read that dangles
 * across a reconnect.
 */
export const BLOCKING_GRACE_MS = 10_000;

/** Fisher-Yates: a fresh queue order for each blocking read, so no queue is always served last. */
export function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
