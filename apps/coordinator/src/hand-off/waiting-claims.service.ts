import type { ClaimedRun } from '@nest-durable/common';
import { Injectable } from '@nestjs/common';

/** A claim long-poll waiting on this coordinator, as the start that took it sees it. */
export interface WaitingClaim {
  readonly workerId: string;
  /** Its worker's build id (null: the worker did not send one), recorded on the run handed to it. */
  readonly buildId: string | null;
  /** Every queue the claim waits for. */
  readonly queues: readonly string[];
  /**
   * Ends the wait: with the run the start handed over, or with nothing (the start inserted its run
   * queued, or no run at all), after which the claim claims as usual.
   */
  settle(run: ClaimedRun | undefined): void;
}

/** The worker a claim or an offer is for, as its request names it. */
export interface ClaimingWorker {
  readonly workerId: string;
  readonly buildId?: string;
}

/** The same wait, as the claim that offered itself sees it. */
export interface ClaimOffer {
  /** Resolves when a start took this claim; `handed` then tells what it handed over. */
  readonly taken: Promise<void>;
  readonly handed: Promise<ClaimedRun | undefined>;
  /** Stops offering the claim to starts. False when a start took it already: await `handed` then. */
  withdraw(): boolean;
}

class Offer implements WaitingClaim, ClaimOffer {
  readonly taken: Promise<void>;
  readonly handed: Promise<ClaimedRun | undefined>;
  private state: 'offered' | 'taken' | 'withdrawn' = 'offered';
  private markTaken!: () => void;
  private resolveHanded!: (run: ClaimedRun | undefined) => void;

  readonly workerId: string;
  readonly buildId: string | null;

  constructor(
    worker: ClaimingWorker,
    readonly queues: readonly string[],
    readonly gone: () => boolean,
    private readonly remove: (offer: Offer) => void,
  ) {
    this.workerId = worker.workerId;
    this.buildId = worker.buildId ?? null;
    this.taken = new Promise((resolve) => (this.markTaken = resolve));
    this.handed = new Promise((resolve) => (this.resolveHanded = resolve));
  }

  /** False when the claim was withdrawn or taken already. */
  take(): boolean {
    if (this.state !== 'offered') return false;
    this.state = 'taken';
    this.remove(this);
    this.markTaken();
    return true;
  }

  settle(run: ClaimedRun | undefined): void {
    this.resolveHanded(run);
  }

  withdraw(): boolean {
    if (this.state === 'taken') return false;
    if (this.state === 'offered') {
      this.state = 'withdrawn';
      this.remove(this);
    }
    return true;
  }
}

/**
 * The claim long-polls waiting on this coordinator, by queue, so that a run started here can be
 * handed straight to one of them (RunControlRepository.start with `handedTo`) instead of being queued
 * and claimed in a second statement and commit. Only this process's claims are here: a start on
 * another coordinator queues its run and wakes claimers through NOTIFY, as before.
 */
@Injectable()
export class WaitingClaims {
  private readonly byQueue = new Map<string, Set<Offer>>();

  /**
   * Offers a claim of `worker` that found nothing and waits for runs of `queues`, until it withdraws or a start
   * takes it. `gone()` says its worker disconnected: a start passes it over.
   */
  offer(worker: ClaimingWorker, queues: readonly string[], gone: () => boolean): ClaimOffer {
    const offer = new Offer(worker, queues, gone, (done) => this.remove(done));
    for (const queue of queues) {
      const offers = this.byQueue.get(queue) ?? new Set();
      offers.add(offer);
      this.byQueue.set(queue, offers);
    }
    return offer;
  }

  /**
   * Takes the claim of `queue` offered longest ago (its worker still connected), if any: a claim offers
   * itself anew each time it waits again, so that is the one idle longest. The claim waits for `settle`
   * from then on: the caller must settle it, whatever happens.
   */
  take(queue: string): WaitingClaim | undefined {
    for (const offer of this.byQueue.get(queue) ?? []) {
      if (!offer.gone() && offer.take()) return offer;
    }
    return undefined;
  }

  /** How many claims (and offers) wait here for runs of `queue`. */
  waiting(queue: string): number {
    return this.byQueue.get(queue)?.size ?? 0;
  }

  private remove(offer: Offer): void {
    for (const queue of offer.queues) {
      const offers = this.byQueue.get(queue);
      offers?.delete(offer);
      if (offers?.size === 0) this.byQueue.delete(queue);
    }
  }
}

/**
 * What the start that took `offer` handed over, waiting for it no longer than `deadline` (a start can wait on
 * a pool connection or an admission lock). A run handed over after that goes to `giveBack`: the claim has
 * answered without it.
 */
export async function handedBy(offer: ClaimOffer, deadline: number, giveBack: (run: ClaimedRun) => Promise<void>): Promise<ClaimedRun | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()))));
  const handed = await Promise.race([offer.handed, late]);
  clearTimeout(timer);
  if (handed !== 'late') return handed;
  void offer.handed.then((run) => run && giveBack(run));
  return undefined;
}
