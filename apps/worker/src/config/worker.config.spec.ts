import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '@app/config';
import { loadWorkerConfig } from './worker.config';

describe('loadWorkerConfig', () => {
  it('applies documented defaults', () => {
    expect(loadWorkerConfig({})).toMatchObject({
      coordinatorUrls: ['http://127.0.0.1:3000'],
      concurrency: 10,
      heartbeatIntervalMs: 30_000,
      claimWaitMs: 20_000,
      port: 3001,
      host: '0.0.0.0',
    });
    expect(loadWorkerConfig({ WORKER_HOST: '127.0.0.1' }).host).toBe('127.0.0.1');
  });

  it('takes several coordinators as a comma-separated list', () => {
    expect(loadWorkerConfig({ COORDINATOR_URL: 'http://a:3000, http://b:3000' }).coordinatorUrls).toEqual(['http://a:3000', 'http://b:3000']);
    expect(() => loadWorkerConfig({ COORDINATOR_URL: 'http://a:3000,b:3000' })).toThrow('COORDINATOR_URL must be a http or https URL, got "b:3000"');
  });

  it('names a malformed variable', () => {
    expect(() => loadWorkerConfig({ WORKER_CONCURRENCY: '0' })).toThrow('WORKER_CONCURRENCY must be an integer from 1 to 10000, got "0"');
    expect(() => loadWorkerConfig({ COORDINATOR_URL: 'localhost:3000' })).toThrow('COORDINATOR_URL must be a http or https URL');
    expect(() => loadWorkerConfig({ WORKER_SHARDS: 'eu,a b' })).toThrow(
      new ConfigError(`WORKER_SHARDS: shard must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit, got "a b"`),
    );
    expect(() => loadWorkerConfig({ WORKER_HOST: 'not_a_host' })).toThrow('WORKER_HOST must be an IP address or a host name, got "not_a_host"');
    expect(loadWorkerConfig({ WORKER_SHARDS: 'eu, us-east' }).shards).toEqual(['eu', 'us-east']);
  });

  it("reads WORKER_BUILD_ID, left to the worker module's default when unset", () => {
    expect(loadWorkerConfig({ WORKER_BUILD_ID: '1.4.0+sha.5e3c1f2' }).buildId).toBe('1.4.0+sha.5e3c1f2');
    expect(loadWorkerConfig({}).buildId).toBeUndefined();
    expect(() => loadWorkerConfig({ WORKER_BUILD_ID: 'release 7' })).toThrow(
      new ConfigError(
        `WORKER_BUILD_ID: buildId must be 1-128 characters of letters, digits, '.', '_', '+' or '-', starting with a letter or digit, got "release 7"`,
      ),
    );
  });

  it('reads a Redis Cluster seed list, and refuses it beside REDIS_URL', () => {
    expect(loadWorkerConfig({ REDIS_CLUSTER_NODES: 'redis-1:7000, 10.0.0.2:7001,[::1]:7002' }).redisClusterNodes).toEqual([
      { host: 'redis-1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(loadWorkerConfig({}).redisClusterNodes).toEqual([]);
    expect(() => loadWorkerConfig({ REDIS_CLUSTER_NODES: 'redis-1' })).toThrow('REDIS_CLUSTER_NODES must be comma-separated host:port pairs, got "redis-1"');
    expect(() => loadWorkerConfig({ REDIS_CLUSTER_NODES: 'redis-1:70000' })).toThrow('REDIS_CLUSTER_NODES must be comma-separated host:port pairs');
    expect(() => loadWorkerConfig({ REDIS_CLUSTER_NODES: 'redis-1:7000', REDIS_URL: 'redis://redis:6379' })).toThrow(
      'REDIS_URL and REDIS_CLUSTER_NODES are both set',
    );
  });
});
