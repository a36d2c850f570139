import { type ClaimedRun, settleWithin } from '@nest-durable/common';
import { Logger } from '@nestjs/common';
import type { HttpSubscriber } from './http.subscriber';
import { delivery, type NextDelayParams, type Subscriber } from './subscriber.interface';

export const FIRST_PROBE_DELAY_MS = 500;
const MAX_PROBE_DELAY_MS = 30_000;
/**
 * A probe not settled by then counts as failed, so the next one can start (one at a time). A Redis that is
 * reachable answers well within it (its connection attempt is bounded at 2 s); one that does not answer a
 * probe is no primary to return to, and a probe that never settled would otherwise keep the worker on HTTP.
 */
export const PROBE_TIMEOUT_MS = 10_000;

/**
 * Wraps any primary subscriber that is not the HTTP one with an HTTP backup. When the primary fails
 * the worker switches to the backup at once; it probes the primary with backoff meanwhile and returns
 * to it once it answers. A probe runs beside the backup's claims, never before one: a probe can take
 * seconds (a host that does not answer), and a claim held back meanwhile would leave due runs waiting,
 * so an outage of the primary costs no latency beyond the HTTP path's. The backup's claims long-poll
 * only until the next probe is due. Nothing runs twice because of a switch: both take runs at the
 * coordinator under the revision check.
 */
export class FailoverSubscriber implements Subscriber {
  private readonly logger = new Logger(FailoverSubscriber.name);
  private onBackup = false;
  private probeDelayMs = FIRST_PROBE_DELAY_MS;
  private nextProbeAt = 0;
  private probing: Promise<void> | undefined;
  /** Which subscriber delivered each run taken (by id and revision): heartbeats and acknowledgements go back to it. */
  private readonly deliveredBy = new Map<string, Subscriber>();
  failovers = 0;

  constructor(
    readonly primary: Subscriber,
    private readonly backup: HttpSubscriber,
    private readonly claimWaitMs: number,
  ) {}

  get name(): string {
    return this.onBackup ? `${this.backup.name} (backup of ${this.primary.name})` : this.primary.name;
  }

  get usingBackup(): boolean {
    return this.onBackup;
  }

  async getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    if (this.onBackup && !this.probing && Date.now() >= this.nextProbeAt) this.probePrimary();
    if (!this.onBackup) {
      try {
        return this.remember(this.primary, await this.primary.getReadyRuns(limit, signal));
      } catch (error) {
        if (signal.aborted) throw error;
        this.failovers++;
        this.onBackup = true;
        this.probeDelayMs = FIRST_PROBE_DELAY_MS;
        this.nextProbeAt = Date.now() + this.probeDelayMs;
        this.logger.warn(`${this.primary.name} failed; taking work over HTTP until it recovers`, {
          subscriber: this.primary.name,
          error: (error as Error).message,
        });
      }
    }
    const waitMs = Math.max(0, Math.min(this.claimWaitMs, this.nextProbeAt - Date.now()));
    return this.remember(this.backup, await this.backup.claim(limit, signal, waitMs));
  }

  getNextDelay(params: NextDelayParams): number {
    return (this.onBackup ? this.backup : this.primary).getNextDelay(params);
  }

  async heartbeat(runId: string, revision: number): Promise<void> {
    await this.deliveredBy.get(delivery(runId, revision))?.heartbeat?.(runId, revision);
  }

  async acknowledge(runId: string, revision: number): Promise<void> {
    const subscriber = this.deliveredBy.get(delivery(runId, revision));
    this.deliveredBy.delete(delivery(runId, revision));
    await subscriber?.acknowledge?.(runId, revision);
  }

  async close(): Promise<void> {
    await this.primary.close?.();
  }

  /** Starts a probe of the primary, and sets when the next is due should this one fail (the backup claims until then). */
  private probePrimary(): void {
    this.probeDelayMs = Math.min(MAX_PROBE_DELAY_MS, this.probeDelayMs * 2);
    this.nextProbeAt = Date.now() + this.probeDelayMs;
    const probe = this.primary.probe ? this.primary.probe() : Promise.resolve();
    this.probing = settleWithin(probe, PROBE_TIMEOUT_MS, () => new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`))
      .then(
        () => {
          this.onBackup = false;
          this.logger.log(`${this.primary.name} is back; taking work from it again`);
        },
        () => undefined,
      )
      .finally(() => (this.probing = undefined));
  }

  private remember(subscriber: Subscriber, runs: ClaimedRun[]): ClaimedRun[] {
    for (const run of runs) this.deliveredBy.set(delivery(run.id, run.revision), subscriber);
    return runs;
  }
}
