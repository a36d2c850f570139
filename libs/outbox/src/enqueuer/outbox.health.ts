import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { OutboxRepository } from './outbox.repository';

export interface OutboxHealthThresholds {
  backlogAgeSeconds: number;
  deadLetters: number;
}

/**
 * Degraded (still serving) when the oldest due outbox row has waited too long (the publisher is
 * failing or falling behind) or rows were dead-lettered; down when the outbox cannot be read.
 */
@Injectable()
export class OutboxHealth {
  constructor(
    private readonly repository: OutboxRepository,
    private readonly health: HealthIndicatorService,
  ) {}

  async isHealthy(thresholds: OutboxHealthThresholds, key = 'outbox') {
    const indicator = this.health.check(key);
    try {
      const stats = await this.repository.stats();
      const data = { backlog: stats.backlog, backlogAgeSeconds: Math.round(stats.backlogAgeSeconds), deadLetters: stats.deadLetters };
      const lagging = stats.backlogAgeSeconds > thresholds.backlogAgeSeconds || stats.deadLetters >= thresholds.deadLetters;
      return lagging ? indicator.degraded(data) : indicator.up(data);
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}
