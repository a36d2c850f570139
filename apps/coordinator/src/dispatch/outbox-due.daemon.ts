import { LeaderElection, SingletonDaemon } from '@app/locking';
import { OutboxEnqueuer } from '@app/outbox';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { DueTimers } from '../timers/due-timers.service';

/**
 * Publishes outbox rows the moment they come due (a run's outbox row waits for its due time): on
 * each signal of the due timers, wakes this coordinator's enqueuer. One coordinator does it at a time,
 * so coordinators do not all race for every due row (SKIP LOCKED would keep them from publishing it
 * twice, but each would still query); if it dies, another takes over within LEADER_CHECK_INTERVAL_MS,
 * and the enqueuers' polls cover meanwhile.
 */
@Injectable()
export class OutboxDueDaemon implements SingletonDaemon, OnModuleInit {
  readonly name = 'outbox-due';
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly election: LeaderElection,
    private readonly timers: DueTimers,
    private readonly enqueuer: OutboxEnqueuer,
  ) {}

  onModuleInit(): void {
    this.election.register(this);
  }

  start(): void {
    this.stopListening = this.timers.onDue(() => this.enqueuer.publishDue());
    // Rows that came due while no coordinator led this (a start, a failover) are published now.
    this.enqueuer.publishDue();
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = undefined;
  }
}
