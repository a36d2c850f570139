import { HeartbeatRequest } from '@nest-durable/common';
import { HeartbeatRepository } from '@app/run-store';
import { Injectable } from '@nestjs/common';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/** Workers' heartbeats: one request refreshes the claims of all a worker's runs. */
@Injectable()
export class HeartbeatsService {
  constructor(
    private readonly heartbeats: HeartbeatRepository,
    private readonly metrics: CoordinatorMetrics,
  ) {}

  /** Refreshes the claims; returns the runs the worker no longer holds. */
  async heartbeat(runs: HeartbeatRequest['runs']): Promise<string[]> {
    const lost = await this.heartbeats.refresh(runs);
    this.metrics.heartbeats.inc(runs.length - lost.length);
    return lost;
  }
}
