import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { HealthIndicatorFunction } from '@nestjs/terminus';
// Its own entry, not @app/streams: that index loads ioredis, which an app without Redis lacks.
import { RedisHealth } from '@app/streams/health';
import { CoordinatorHealth } from '../coordinator.health';
import { WorkerRuntimeHealth } from '../worker-runtime.health';
import { providedInApp, workerProvided } from './provided-in-app';

/**
 * What the worker's health endpoints check. Live: the consume loop makes progress (not merely that the process
 * answers). Ready: that, a coordinator answers, and Redis answers when the app has a RedisModule (which a Redis
 * subscriber needs).
 */
@Injectable()
export class WorkerHealthChecks implements OnModuleInit {
  live: HealthIndicatorFunction[] = [];
  ready: HealthIndicatorFunction[] = [];

  constructor(private readonly moduleRef: ModuleRef) {}

  onModuleInit(): void {
    const runtime = workerProvided(this.moduleRef, WorkerRuntimeHealth);
    const coordinator = workerProvided(this.moduleRef, CoordinatorHealth);
    const redis = providedInApp(this.moduleRef, RedisHealth);
    this.live = [() => runtime.isHealthy()];
    this.ready = [() => runtime.isHealthy(), () => coordinator.isHealthy(), ...(redis ? [() => redis.isHealthy()] : [])];
  }
}
