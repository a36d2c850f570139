import type { Consumer, Reclaimed, Wakeup } from '@app/streams';
import { type ClaimedRun, queueName, type TakeRunsResponse, type WorkflowRef } from '@nest-durable/common';
import { Logger } from '@nestjs/common';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import type { HandOffOffers } from './hand-off-offers';
import { delivery, type NextDelayParams, type Subscriber } from './subscriber.interface';

/**
 * The subscriber of a transport (Redis Streams, a sorted set), over its Consumer: it reads wake-ups, never
 * more than it has free slots, and takes per queue as many runs at the coordinator, which picks them as a
 * claim would (priority, work stealing) and says which wake-up each run was taken with. The wake-up behind
 * each run taken is held until the run ends here, then acknowledged (and touched on every heartbeat
 * meanwhile); those the coordinator hands back (their queue still has runs waiting) go back to the
 * transport, the rest are done with. Reclaimed wake-ups delivered more than `maxDeliveries` times go to
 * the coordinator as dead letters. While idle, it also offers itself to a coordinator's starts (see
 * HandOffOffers).
 */
export class TransportSubscriber<W extends Wakeup = Wakeup> implements Subscriber {
  private readonly logger = new Logger(TransportSubscriber.name);
  private readonly refs = new Map<string, WorkflowRef>();
  /** The wake-up behind each taken run, by run id and the revision it was taken at. */
  private readonly held = new Map<string, W>();
  /** Wake-ups that took no run (the work they announced was taken another way). */
  stale = 0;
  /** Wake-ups handed to the coordinator as dead letters. */
  deadLettered = 0;

  constructor(
    /** For logs, metrics and the worker registry: 'redis-zset', 'redis-streams'. */
    readonly name: string,
    readonly consumer: Consumer<W>,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly maxDeliveries: number,
    private readonly offers?: HandOffOffers,
  ) {
    for (const ref of registry.refs()) this.refs.set(queueName(ref.name, ref.version, ref.shard), ref);
  }

  getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    return this.offers ? this.offers.around(limit, signal, (free, stop) => this.read(free, stop)) : this.read(limit, signal);
  }

  getNextDelay(params: NextDelayParams): number {
    return params.type === 'no_work' ? 0 : Math.min(5_000, 100 * 2 ** params.attempt);
  }

  /** Keeps the wake-up of a long-running run from looking orphaned. */
  async heartbeat(runId: string, revision: number): Promise<void> {
    const wakeup = this.held.get(delivery(runId, revision));
    if (wakeup) await this.consumer.touch([wakeup]);
  }

  /** Acknowledges the wake-up behind this taking of the run (not one of a later taking). */
  async acknowledge(runId: string, revision: number): Promise<void> {
    const wakeup = this.held.get(delivery(runId, revision));
    this.held.delete(delivery(runId, revision));
    if (wakeup) await this.consumer.ack([wakeup]);
  }

  probe(): Promise<void> {
    return this.consumer.probe();
  }

  /** Withdraws the hand-off offer, and stops reading. */
  async close(): Promise<void> {
    await this.offers?.close();
    await this.consumer.close();
  }

  /** Takes runs for the wake-ups it finds: reclaimed ones, then new ones (waited for only when none were reclaimed). */
  private read(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    return this.consumer.attend(async () => {
      const reclaimed = await this.deadLetterOverDelivered(await this.consumer.reclaim(limit, this.held.values()));
      // Reclaimed wake-ups are taken at once, with what else is at hand: a signal aborted already reads without waiting.
      const arrived = await this.consumer.read(limit - reclaimed.length, reclaimed.length > 0 ? AbortSignal.abort() : signal);
      const found = [...reclaimed, ...arrived];
      return found.length === 0 ? [] : this.take(found);
    });
  }

  /**
   * Wake-ups delivered more than maxDeliveries times (the workers that took them kept stopping) go to the
   * coordinator as dead letters, which fails the run each last took as `stalled` if that claim went idle;
   * then they are acknowledged. One the coordinator could not take is restored, to be handed over on a
   * later reclaim.
   */
  private async deadLetterOverDelivered(reclaimed: Reclaimed<W>[]): Promise<W[]> {
    const keep: W[] = [];
    for (const { wakeup, deliveries, runId } of reclaimed) {
      if (deliveries <= this.maxDeliveries) {
        keep.push(wakeup);
        continue;
      }
      try {
        await this.api.reportDeadLetter({ workflow: this.refs.get(wakeup.queue)!, wakeup: wakeup.name, ...(runId ? { runId } : {}), deliveries });
      } catch (error) {
        this.logger.warn(`could not hand wake-up ${wakeup.name} of ${wakeup.queue} to the coordinator as a dead letter: ${(error as Error).message}`);
        await this.consumer.restore([wakeup]);
        continue;
      }
      this.deadLettered++;
      await this.consumer.ack([wakeup]);
      this.logger.warn(`wake-up ${wakeup.name} of ${wakeup.queue} was delivered ${deliveries} times; dead-lettered`, { runId });
    }
    return keep;
  }

  /**
   * Takes, per queue, one run per wake-up found for it. Each run taken keeps the wake-up it was taken with
   * (acknowledged when the run ends here); wake-ups the coordinator hands back go back to the transport,
   * the rest are acknowledged now. When the take fails, the wake-ups are restored and the error thrown.
   */
  private async take(found: W[]): Promise<ClaimedRun[]> {
    const byName = new Map<string, W>();
    const names = new Map<string, string[]>();
    for (const wakeup of found) {
      const key = nameInQueue(wakeup.queue, wakeup.name);
      // Found twice (taken back while its read's reply was on its way): a wake-up is named once.
      if (byName.has(key)) continue;
      byName.set(key, wakeup);
      names.set(wakeup.queue, [...(names.get(wakeup.queue) ?? []), wakeup.name]);
    }
    let taken: TakeRunsResponse;
    try {
      taken = await this.api.take([...names].map(([queue, wakeups]) => ({ ...this.refs.get(queue)!, wakeups })));
    } catch (error) {
      await this.consumer.restore([...byName.values()]);
      throw error;
    }
    const claim = (queue: string, name: string) => {
      const wakeup = byName.get(nameInQueue(queue, name));
      byName.delete(nameInQueue(queue, name));
      return wakeup;
    };
    for (const run of taken.runs) {
      const wakeup = run.wakeup === undefined ? undefined : claim(run.queue, run.wakeup);
      if (wakeup) this.held.set(delivery(run.id, run.revision), wakeup);
    }
    const giveBack = taken.requeue.flatMap(({ queue, wakeup }) => claim(queue, wakeup) ?? []);
    const done = [...byName.values()];
    this.stale += done.length;
    try {
      await this.consumer.giveBack(giveBack);
      await this.consumer.ack(done);
    } catch (error) {
      // The runs are this worker's now: they must start. Wake-ups left unsettled are reclaimed later.
      this.logger.warn(`could not give back or acknowledge wake-ups after a take: ${(error as Error).message}`);
    }
    return taken.runs;
  }
}

/** A wake-up's name is unique within its queue only. */
function nameInQueue(queue: string, name: string): string {
  return `${queue}\u0000${name}`;
}
