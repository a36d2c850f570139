import type { ClaimedRun } from '@nest-durable/common';
import { Inject, Injectable } from '@nestjs/common';
import { CoordinatorApi } from '../coordinator.api';
import { WorkflowRegistry } from '../workflow.registry';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from '../worker.options';
import type { NextDelayParams, Subscriber } from './subscriber.interface';

const MAX_RETRY_DELAY_MS = 10_000;

/**
 * The default subscriber: claims ready runs through the coordinator's claim API, which needs
 * nothing but PostgreSQL. The claim long-polls, so an idle worker hears of new work within
 * milliseconds without polling.
 */
@Injectable()
export class HttpSubscriber implements Subscriber {
  readonly name = 'http';

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
  ) {}

  getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    return this.claim(limit, signal, this.options.claimWaitMs);
  }

  /** A claim that long-polls at most `waitMs` (the failover subscriber keeps it short to probe its primary). */
  claim(limit: number, signal: AbortSignal, waitMs: number): Promise<ClaimedRun[]> {
    return this.api.claim(this.registry.refs(), limit, waitMs, signal);
  }

  getNextDelay(params: NextDelayParams): number {
    if (params.type === 'no_work') return 0;
    const ceiling = Math.min(MAX_RETRY_DELAY_MS, 100 * 2 ** Math.min(params.attempt, 10));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }
}
