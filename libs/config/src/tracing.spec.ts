import { describe, expect, it } from '@jest/globals';
import { ConfigError, EnvReader } from './env-reader';
import { readTracing } from './tracing';

const read = (env: Record<string, string>) => readTracing(new EnvReader(env), 'nest-durable-worker');

describe('readTracing', () => {
  it("is off by default, and exports to the local collector under the app's name once an exporter or endpoint is set", () => {
    expect(read({})).toMatchObject({ enabled: false });
    expect(read({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      enabled: true,
      serviceName: 'nest-durable-worker',
      endpoint: 'http://localhost:4318/v1/traces',
      headers: {},
      exportDelayMs: 5_000,
    });
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({ enabled: true, endpoint: 'http://collector:4318/v1/traces' });
  });

  it('takes the traces endpoint as it is, the service name, headers and the export delay', () => {
    expect(
      read({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/otlp/traces',
        OTEL_SERVICE_NAME: 'orders-worker',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc, x-team=orders',
        OTEL_BSP_SCHEDULE_DELAY: '250',
      }),
    ).toEqual({
      enabled: true,
      serviceName: 'orders-worker',
      endpoint: 'https://collector.example/otlp/traces',
      headers: { authorization: 'Bearer abc', 'x-team': 'orders' },
      exportDelayMs: 250,
    });
  });

  it('stays off with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none, whatever the endpoint', () => {
    expect(read({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ enabled: false });
    expect(read({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({ enabled: false });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER must be otlp or none'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/json'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT must be a http or https URL'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }, 'OTEL_EXPORTER_OTLP_HEADERS: each header must be key=value'],
  ])('refuses %j with one line', (env, message) => {
    expect(() => read(env)).toThrow(ConfigError);
    expect(() => read(env)).toThrow(message);
  });
});
