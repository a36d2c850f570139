import { Inject, Injectable, Optional } from '@nestjs/common';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Injection token of a prom-client registry the series join instead of one of the service's own. */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/**
 * One Prometheus registry per app (not prom-client's global one, so several apps can live in one
 * process, as they do in tests), with the process metrics, and helpers that name every series
 * `wf_<name>`. Given a registry (METRICS_REGISTRY: an app's own, which the worker package's operations
 * module can join), the series go there and the process metrics are left to its owner.
 */
@Injectable()
export class MetricsService {
  readonly registry: Registry;

  constructor(@Optional() @Inject(METRICS_REGISTRY) registry?: Registry) {
    this.registry = registry ?? new Registry();
    if (!registry) collectDefaultMetrics({ register: this.registry, prefix: 'wf_' });
  }

  counter<L extends string = never>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    return new Counter({ name: `wf_${name}`, help, labelNames, registers: [this.registry] });
  }

  histogram<L extends string = never>(name: string, help: string, buckets: number[], labelNames: L[] = []): Histogram<L> {
    return new Histogram({ name: `wf_${name}`, help, buckets, labelNames, registers: [this.registry] });
  }

  /** A gauge read when Prometheus scrapes (`read` may query). */
  gauge(name: string, help: string, read: () => number | Promise<number>): Gauge {
    return new Gauge({
      name: `wf_${name}`,
      help,
      registers: [this.registry],
      async collect() {
        this.set(await read());
      },
    });
  }

  /** A counter whose value lives elsewhere (a plain counter object), read when Prometheus scrapes. */
  externalCounter(name: string, help: string, read: () => number): Counter {
    let reported = 0;
    return new Counter({
      name: `wf_${name}`,
      help,
      registers: [this.registry],
      collect() {
        const value = read();
        if (value > reported) this.inc(value - reported);
        reported = value;
      },
    });
  }

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Latency buckets from 0.5 ms to 30 s. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
