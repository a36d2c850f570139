import type { DispatchMessage } from './dispatch-message';

export const PUBLISHER = Symbol('PUBLISHER');

/** Coordinator side of a transport: carries wake-ups from the outbox to the workers. */
export interface Publisher {
  readonly name: string;
  /**
   * Resolves with one entry per message, `undefined` when sent or the error that kept it from being
   * sent, so the outbox can retry exactly the failed ones.
   */
  publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]>;
  /**
   * How many wake-ups of each queue the transport holds that no worker has received yet (the
   * republish daemon tops a queue up to the runs it has waiting, never beyond).
   */
  undelivered(queues: string[]): Promise<Map<string, number>>;
  /**
   * Calls `listener` each time the transport is reachable again after it was lost: what it held may be
   * gone (a Redis restarted without persistence), and what failed to publish meanwhile can go now.
   * Returns the function that stops it.
   */
  onRecovered(listener: () => void): () => void;
}

export const STREAM_PARTITIONS = Symbol('STREAM_PARTITIONS');

/** Redis Streams: the partition count of every queue's streams, known once the app has initialised (onModuleInit). */
export interface StreamPartitionCount {
  readonly count: number;
}
