import { describe, expect, it } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent, remoteContext, traceCarrierOf } from './trace-context';

describe('traceparent', () => {
  const value = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('reads the ids and flags of a version-00 traceparent, and writes them back', () => {
    const parsed = parseTraceparent(value);
    expect(parsed).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    expect(formatTraceparent(parsed!)).toBe(value);
  });

  it.each([
    ['another version', value.replace(/^00/, '01')],
    ['upper case', value.toUpperCase()],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['an all-zero span id', `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`],
    ['a short span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01'],
    ['trailing text', `${value}-00`],
  ])('refuses %s', (_case, bad) => {
    expect(parseTraceparent(bad)).toBeUndefined();
  });
});

describe('trace contexts through the OpenTelemetry API', () => {
  const value = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('carries a remote span context on as it came, with its tracestate', () => {
    const parent = trace.getSpan(remoteContext(value, 'vendor=abc'));
    expect(traceCarrierOf(parent)).toEqual({ traceparent: value, tracestate: 'vendor=abc' });
  });

  it('carries nothing for a missing or malformed traceparent, and drops a tracestate over the bound', () => {
    expect(traceCarrierOf(trace.getSpan(remoteContext(undefined)))).toBeUndefined();
    expect(traceCarrierOf(trace.getSpan(remoteContext('00-nope')))).toBeUndefined();
    const long = Array.from({ length: 30 }, (_, i) => `vendor${i}=${'x'.repeat(20)}`).join(',');
    expect(traceCarrierOf(trace.getSpan(remoteContext(value, long)))).toEqual({ traceparent: value });
  });
});
