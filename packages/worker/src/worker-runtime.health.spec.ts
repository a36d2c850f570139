import { describe, expect, it } from '@jest/globals';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { WorkerRuntime } from './worker-runtime.service';
import { WorkerRuntimeHealth } from './worker-runtime.health';

/** The indicator over a runtime whose consume loop reports `progress`. */
const indicatorOver = (progress: ReturnType<WorkerRuntime['progress']>) =>
  new WorkerRuntimeHealth({ progress: () => progress } as WorkerRuntime, new HealthIndicatorService());

describe('WorkerRuntimeHealth', () => {
  it('is up, with what the loop is doing, while the consume loop makes progress', () => {
    expect(indicatorOver({ healthy: true, detail: '2 running, reading from http' }).isHealthy()).toEqual({
      consumer: { status: 'up', detail: '2 running, reading from http' },
    });
  });

  it('is down, saying why, when the consume loop has stopped making progress', () => {
    expect(indicatorOver({ healthy: false, detail: 'the consume loop has ended' }).isHealthy('loop')).toEqual({
      loop: { status: 'down', detail: 'the consume loop has ended' },
    });
  });
});
