import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { NotificationListener } from './notification-listener.service';

/** Down while the LISTEN session is reconnecting: long-polls then fall back to their poll interval. */
@Injectable()
export class NotificationListenerHealth {
  constructor(
    private readonly listener: NotificationListener,
    private readonly health: HealthIndicatorService,
  ) {}

  isHealthy(key = 'listen') {
    const indicator = this.health.check(key);
    return this.listener.isListening ? indicator.up() : indicator.down({ message: 'LISTEN session is reconnecting' });
  }
}
