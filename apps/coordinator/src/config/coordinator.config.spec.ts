import { describe, expect, it } from '@jest/globals';
import { loadCoordinatorConfig } from './coordinator.config';

const DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/app';
const TOKENS = { CLIENT_TOKEN: 'client-token-0123456789', WORKER_TOKEN: 'worker-token-0123456789' };

describe('loadCoordinatorConfig', () => {
  it('applies documented defaults', () => {
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS })).toMatchObject({
      port: 3000,
      database: { hosts: [{ host: '127.0.0.1', port: 5432 }], url: DATABASE_URL, targetSessionAttrs: undefined },
      claimMinIdleTimeMs: 90_000,
      heartbeatIntervalMs: 30_000,
      outboxStaleInFlightMs: 30_000,
    });
  });

  it('refuses to start without tokens unless auth is explicitly disabled', () => {
    expect(() => loadCoordinatorConfig({ DATABASE_URL })).toThrow('CLIENT_TOKEN is required (or set AUTH_DISABLED=true to run without authentication)');
    expect(() => loadCoordinatorConfig({ DATABASE_URL, CLIENT_TOKEN: TOKENS.CLIENT_TOKEN })).toThrow('WORKER_TOKEN is required');
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, WORKER_TOKEN: 'short' })).toThrow('WORKER_TOKEN must be at least 16 characters');
    expect(loadCoordinatorConfig({ DATABASE_URL, AUTH_DISABLED: 'true' })).toMatchObject({ authDisabled: true });
    expect(() => loadCoordinatorConfig({ DATABASE_URL, AUTH_DISABLED: 'yes' })).toThrow('AUTH_DISABLED must be true or false');
  });

  it('validates the dispatch mode and the Redis prefix', () => {
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, DISPATCH: 'kafka' })).toThrow(
      'DISPATCH must be one of none, redis-zset, redis-streams, got "kafka"',
    );
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, REDIS_PREFIX: 'a b' })).toThrow('REDIS_PREFIX must be');
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, REDIS_CLUSTER_NODES: 'r1:7000,r2:7000' }).redisClusterNodes).toEqual([
      { host: 'r1', port: 7000 },
      { host: 'r2', port: 7000 },
    ]);
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, REDIS_CLUSTER_NODES: 'r1:7000', REDIS_URL: 'redis://r1:6379' })).toThrow(
      'REDIS_URL and REDIS_CLUSTER_NODES are both set',
    );
  });

  it('refuses a HOST that is neither an IP address nor a host name', () => {
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, HOST: '999.1.1.1' })).toThrow('HOST must be an IP address or a host name, got "999.1.1.1"');
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, HOST: '::' }).host).toBe('::');
  });

  it("takes a trace viewer's address with {traceId} in it, and refuses one without it or not http(s)", () => {
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS }).traceUrlTemplate).toBeUndefined();
    const template = 'https://jaeger.example.com/trace/{traceId}';
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, TRACE_URL_TEMPLATE: template }).traceUrlTemplate).toBe(template);
    for (const bad of ['https://jaeger.example.com/trace/', 'javascript:alert({traceId})', 'not a url {traceId}']) {
      expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, TRACE_URL_TEMPLATE: bad })).toThrow(
        'TRACE_URL_TEMPLATE must be an http(s) address with {traceId} in it',
      );
    }
  });

  it('requires DATABASE_URL', () => {
    expect(() => loadCoordinatorConfig({})).toThrow('DATABASE_URL is required');
  });

  it('takes a DATABASE_URL naming several servers, and refuses a bad one at start with one line (password hidden)', () => {
    const several = 'postgres://app:secret@db1:5432,db2:5433/app?target_session_attrs=read-write';
    expect(loadCoordinatorConfig({ DATABASE_URL: several, ...TOKENS }).database).toEqual({
      hosts: [
        { host: 'db1', port: 5432 },
        { host: 'db2', port: 5433 },
      ],
      url: 'postgres://app:secret@db1:5432/app',
      targetSessionAttrs: 'read-write',
    });
    expect(() => loadCoordinatorConfig({ DATABASE_URL: 'mysql://db/app', ...TOKENS })).toThrow(
      'DATABASE_URL must be a postgres:// or postgresql:// URL, got "mysql://db/app"',
    );
    expect(() => loadCoordinatorConfig({ DATABASE_URL: 'postgres://app:secret@db1,db2:99999/app', ...TOKENS })).toThrow(
      'DATABASE_URL has a bad host "db2:99999" (host or host:port, hosts separated by commas), got "postgres://app:***@db1,db2:99999/app"',
    );
    expect(() => loadCoordinatorConfig({ DATABASE_URL: 'postgres://db1,db2/app?target_session_attrs=standby', ...TOKENS })).toThrow(
      'DATABASE_URL has target_session_attrs=standby: the coordinator writes, so it must be read-write or primary',
    );
  });

  it('refuses an idle time that is not larger than the heartbeat interval', () => {
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, CLAIM_MIN_IDLE_TIME_MS: '1000', HEARTBEAT_INTERVAL_MS: '1000' })).toThrow(
      'CLAIM_MIN_IDLE_TIME_MS (1000) must be larger than HEARTBEAT_INTERVAL_MS (1000)',
    );
  });

  it('reads the retention window (7 days by default, 0 keeps) and per-workflow windows', () => {
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS })).toMatchObject({
      runRetentionMs: 604_800_000,
      runRetentionOverrides: {},
      retentionBusyPercent: 50,
    });
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, RETENTION_BUSY_PERCENT: '20' })).toMatchObject({ retentionBusyPercent: 20 });
    expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, RETENTION_BUSY_PERCENT: '0' })).toThrow(
      'RETENTION_BUSY_PERCENT must be an integer from 1 to 100',
    );
    expect(loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, RUN_RETENTION_MS: '0', RUN_RETENTION_OVERRIDES: 'reports=60000, audit.log=0' })).toMatchObject({
      runRetentionMs: 0,
      runRetentionOverrides: { reports: 60_000, 'audit.log': 0 },
    });
    for (const bad of ['reports', 'reports=-1', 'a:b=5', 'reports=1,reports=2', '__proto__=1']) {
      expect(() => loadCoordinatorConfig({ DATABASE_URL, ...TOKENS, RUN_RETENTION_OVERRIDES: bad })).toThrow(
        'RUN_RETENTION_OVERRIDES must be comma-separated workflow=milliseconds pairs',
      );
    }
  });
});
