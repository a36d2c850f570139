import { type ClaimedRun } from '@nest-durable/common';
import { isAnsweredError, isTransient } from '@nest-durable/client';
import { Logger } from '@nestjs/common';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import type { ResolvedWorkerOptions } from '../worker.options';

/**
 * How long a withdrawn offer's answer is waited for once its coordinator said it did not know the offer
 * (its answer is on its way, or a load balancer sent the withdrawal elsewhere), or could not be told.
 * A run handed to it later is given back.
 */
const ANSWER_GRACE_MS = 50;

/** How long a worker whose offer a coordinator refused (a 4xx) makes none. */
const REFUSED_PAUSE_MS = 300_000;

/** An offer at one coordinator, from its request until the subscriber took in its answer. */
interface Offer {
  /** Settles once `runs` is set: with its answer, or when it was given up. Never rejects. */
  readonly answered: Promise<void>;
  /** The run handed over (or none); set once answered or given up. */
  runs: ClaimedRun[] | undefined;
  /** Withdraws it (once), giving it up when its coordinator does not have it. */
  withdraw(): void;
}

/** A read of the transport: at most `limit` runs, returning early when `signal` aborts. */
type Read = (limit: number, signal: AbortSignal) => Promise<ClaimedRun[]>;

/**
 * A worker of a transport subscriber (Redis) also offers itself to the starts of one coordinator, as an
 * HTTP claim waiting there does: a run started on that coordinator is then handed to it in the start's
 * own commit (no outbox row, no publish, no take), instead of reaching it through the transport. The
 * offer never claims anything itself, so the database sees no more statements than without it; runs
 * started on other coordinators, or in batches, come through the transport as before.
 *
 * The offer holds one of the worker's free slots, so the transport is read for one run fewer while it
 * waits. It is made while two or more slots are free (a worker of concurrency 1 reads the transport
 * alone) and the last read did not fill the slots it had (a worker kept busy by the transport would only
 * make and withdraw offers). It is withdrawn when the worker is down to the offer's slot: its answer (the
 * run handed at that very moment, if any) then fills that slot. When the offer brings a run first, the
 * read is stopped (its signal) and what it brought comes along.
 */
export class HandOffOffers {
  private readonly logger = new Logger(HandOffOffers.name);
  private offer: Offer | undefined;
  /** Whether the last read filled the slots it had: the transport keeps this worker busy. */
  private busy = false;
  /**
   * Set when a coordinator refused an offer (one that predates offers, during a rolling upgrade, say): until
   * then the worker reads the transport alone.
   */
  private pausedUntil = 0;

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
    private readonly options: Pick<ResolvedWorkerOptions, 'claimWaitMs'>,
  ) {}

  /** Up to `limit` runs: those `read` brings, and one a start hands the offer. */
  async around(limit: number, signal: AbortSignal, read: Read): Promise<ClaimedRun[]> {
    if (this.offer?.runs) return this.collect();
    if (this.offer === undefined && !this.busy && !signal.aborted && limit >= 2 && Date.now() >= this.pausedUntil) this.offer = this.make();
    const offer = this.offer;
    if (offer === undefined) return this.read(limit, signal, read);
    // The worker is down to the offer's slot: withdrawn, the offer answers at once (with a run handed meanwhile, if any).
    if (limit === 1) return this.finish(offer, []);
    // Its own controller, following the runtime's signal only while it reads (AbortSignal.any would leave an
    // entry on the runtime's long-lived signal for every call: nodejs/node#55351).
    const interrupt = new AbortController();
    const stop = () => interrupt.abort();
    signal.addEventListener('abort', stop, { once: true });
    const reading = this.read(limit - 1, interrupt.signal, read)
      .then(
        (runs) => ({ runs }),
        (error: unknown) => ({ error }),
      )
      .finally(() => signal.removeEventListener('abort', stop));
    // An offer that answered with nothing (its waitMs passed, or it failed) does not end the read.
    const handedFirst = offer.answered.then(() => (offer.runs!.length > 0 ? undefined : reading));
    const first = await Promise.race([reading, handedFirst]);
    if (first === undefined) {
      interrupt.abort();
      const stopped = await reading;
      // A read that failed now fails again in the next call: the handed run must not wait for it.
      return [...this.collect(), ...('runs' in stopped ? stopped.runs : [])];
    }
    if ('error' in first) {
      const handed = await this.finish(offer, []);
      if (handed.length > 0) return handed;
      throw first.error;
    }
    // The offer goes on waiting, its slot held, unless the worker is stopping.
    return signal.aborted ? this.finish(offer, first.runs) : first.runs;
  }

  /** Withdraws an offer left waiting and gives back a run handed to it (the worker is shutting down). */
  async close(): Promise<void> {
    const offer = this.offer;
    if (offer) this.giveBack(await this.finish(offer, []));
  }

  private async read(limit: number, signal: AbortSignal, read: Read): Promise<ClaimedRun[]> {
    const runs = await read(limit, signal);
    this.busy = runs.length >= limit;
    return runs;
  }

  /** Withdraws `offer` if it still waits, and returns what it was handed besides `runs`. */
  private async finish(offer: Offer, runs: ClaimedRun[]): Promise<ClaimedRun[]> {
    offer.withdraw();
    await offer.answered;
    return [...runs, ...this.collect()];
  }

  /** The answered offer's runs, taken in: a later call makes a new offer. */
  private collect(): ClaimedRun[] {
    const runs = this.offer?.runs ?? [];
    this.offer = undefined;
    return runs;
  }

  private make(): Offer {
    const { answer, withdraw } = this.api.offer(this.registry.refs(), this.options.claimWaitMs);
    let settle!: () => void;
    let withdrawn = false;
    const offer: Offer = {
      answered: new Promise((resolve) => (settle = resolve)),
      runs: undefined,
      withdraw: () => {
        if (withdrawn || offer.runs) return;
        withdrawn = true;
        withdraw().then(
          (waited) => waited || setTimeout(giveUp, ANSWER_GRACE_MS),
          (error: Error) => {
            this.logger.debug(`withdrawing a hand-off offer failed: ${error.message}`);
            setTimeout(giveUp, ANSWER_GRACE_MS);
          },
        );
      },
    };
    const giveUp = () => {
      if (offer.runs) return;
      offer.runs = [];
      settle();
    };
    answer.then(
      (runs) => {
        // Handed after the offer was given up: its slot went to the transport.
        if (offer.runs) return this.giveBack(runs);
        offer.runs = runs;
        settle();
      },
      (error: unknown) => {
        if (isAnsweredError(error) && !isTransient(error)) {
          this.pausedUntil = Date.now() + REFUSED_PAUSE_MS;
          this.logger.warn(
            `the coordinator refused this worker's hand-off offer (${error.message}); reading the transport alone for ${REFUSED_PAUSE_MS / 60_000} min`,
          );
        }
        giveUp();
      },
    );
    return offer;
  }

  /** Gives runs back at once, for others (handed to an offer given up, or as the worker stops). */
  private giveBack(runs: ClaimedRun[]): void {
    for (const run of runs) {
      this.api.release(run.id, run.revision).catch((error: Error) => {
        this.logger.warn('giving back a run handed to an offer failed; it is taken over after the claim idle timeout', {
          runId: run.id,
          error: error.message,
        });
      });
    }
  }
}
