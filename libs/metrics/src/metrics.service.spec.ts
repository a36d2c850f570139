import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { METRICS_REGISTRY, MetricsService } from './metrics.service';
import { MetricsModule } from './metrics.module';

describe('MetricsService', () => {
  it('keeps a registry of its own, with the process metrics', async () => {
    const app = await Test.createTestingModule({ imports: [MetricsModule] }).compile();
    const metrics = app.get(MetricsService);
    metrics.counter('things_total', 'Things').inc();
    const { contentType, body } = await metrics.text();
    expect(contentType).toBe(metrics.registry.contentType);
    expect(body).toContain('wf_things_total 1');
    expect(body).toContain('wf_process_cpu_seconds_total');
  });

  it("puts its series in the registry it is given, and leaves the process metrics to that registry's owner", async () => {
    const registry = new Registry();
    const app = await Test.createTestingModule({ providers: [MetricsService, { provide: METRICS_REGISTRY, useValue: registry }] }).compile();
    app.get(MetricsService).gauge('queue_depth', 'Depth', () => 7);
    const body = await registry.metrics();
    expect(body).toContain('wf_queue_depth 7');
    expect(body).not.toContain('process_cpu');
  });

  it('reads a counter kept elsewhere when scraped, counting only what it gained since', async () => {
    const metrics = new MetricsService(new Registry());
    let seen = 3;
    metrics.externalCounter('seen_total', 'Seen', () => seen);
    expect(await metrics.registry.metrics()).toContain('wf_seen_total 3');
    seen = 5;
    expect(await metrics.registry.metrics()).toContain('wf_seen_total 5');
  });
});
