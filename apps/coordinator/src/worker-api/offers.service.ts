import { type ClaimedRun, OfferExistsError, OfferNotFoundError, type OfferRequest, queuesOf } from '@nest-durable/common';
import { ReportRepository } from '@app/run-store';
import { type BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { handedBy, WaitingClaims } from '../hand-off/waiting-claims.service';

/**
 * How long past its own `waitMs` an offer waits for the start that took it. Its worker waits for the answer
 * far longer (its request's deadline), so a start that took the offer in its last moment still hands its run
 * over instead of having it given back.
 */
const HANDED_GRACE_MS = 5_000;
/** How long a withdrawal that came before its offer is remembered: the longest `waitMs` an offer may have. */
const EARLY_WITHDRAWAL_MS = 60_000;

/**
 * Offers: an idle worker of a transport subscriber (Redis) offering itself to the starts of this coordinator
 * (HandOffOffers in the worker). An offer waits in WaitingClaims, as a claim does, until a start hands it a
 * run, its worker withdraws it or goes away, `waitMs` passes or the coordinator stops. It never runs the
 * claim statement: its worker reads the transport for everything else.
 *
 * Withdrawn, an offer answers at once, with the run a start handed it before, if any: that is why workers
 * withdraw offers instead of dropping their requests, whose answers (a run handed at that moment) would be
 * lost, the run left running for nobody until its claim went idle.
 */
@Injectable()
export class OffersService implements BeforeApplicationShutdown {
  /** The offers waiting here, by id: what ends each one's wait. */
  private readonly waits = new Map<string, () => void>();
  /**
   * Offers withdrawn before they arrived (the withdrawal overtook its offer on another connection), by id, until
   * when they are remembered: such an offer answers at once when it comes, instead of waiting for nobody.
   */
  private readonly withdrawnEarly = new Map<string, number>();
  private closing = false;

  constructor(
    private readonly waiting: WaitingClaims,
    private readonly reports: ReportRepository,
  ) {}

  /** Ends every offer's wait, and any offer made from now on answers at once: the HTTP server can drain. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    for (const end of this.waits.values()) end();
  }

  /** Waits for a start to hand the offer a run (see the class); `gone()` and `closed` say its worker went away. */
  async offer(request: OfferRequest, gone: () => boolean, closed: Promise<void>): Promise<ClaimedRun[]> {
    if (this.waits.has(request.offerId)) throw new OfferExistsError(request.offerId);
    if (this.closing || this.withdrawnEarly.delete(request.offerId)) return [];
    const queues = queuesOf(request.workflows);
    const deadline = Date.now() + request.waitMs;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    const timer = setTimeout(end, request.waitMs);
    this.waits.set(request.offerId, end);
    void closed.then(end);
    try {
      for (;;) {
        const offer = this.waiting.offer(request, queues, gone);
        await Promise.race([offer.taken, ended]);
        if (offer.withdraw()) return [];
        const handed = await handedBy(offer, deadline + HANDED_GRACE_MS, (run) => this.giveBack(run));
        if (handed !== undefined) {
          if (!gone()) return [handed];
          await this.giveBack(handed);
          return [];
        }
        // The start queued its run (flow control, or runs ahead of it in the queue), for the transport: offered
        // again, while time is left.
        if (Date.now() >= deadline) return [];
      }
    } finally {
      clearTimeout(timer);
      this.waits.delete(request.offerId);
    }
  }

  /** Ends the wait of the offer `offerId` on this coordinator; 404 when none such waits here. */
  withdraw(offerId: string): void {
    const end = this.waits.get(offerId);
    if (end) {
      end();
      return;
    }
    const now = Date.now();
    // Oldest first (a Map keeps insertion order): only the expired head is walked.
    for (const [id, until] of this.withdrawnEarly) {
      if (until > now) break;
      this.withdrawnEarly.delete(id);
    }
    this.withdrawnEarly.set(offerId, now + EARLY_WITHDRAWAL_MS);
    throw new OfferNotFoundError(offerId);
  }

  /** Gives a run back for others at once (handed to an offer whose worker went away, or after its answer). */
  private async giveBack(run: ClaimedRun): Promise<void> {
    await this.reports.release(run.id, run.revision).catch(() => undefined);
  }
}
