import { describe, expect, it } from '@jest/globals';
import { loadCoordinatorConfig } from './coordinator.config';

const DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/app';

describe('loadCoordinatorConfig', () => {
  it('applies documented defaults', () => {
    expect(loadCoordinatorConfig({ DATABASE_URL })).toMatchObject({
      port: 3000,
      databaseUrl: DATABASE_URL,
      claimMinIdleTimeMs: 90_000,
      heartbeatIntervalMs: 30_000,
    });
  });

  it('requires DATABASE_URL', () => {
    expect(() => loadCoordinatorConfig({})).toThrow('DATABASE_URL is required');
  });

  it('refuses an idle time that is not larger than the heartbeat interval', () => {
    expect(() =>
      loadCoordinatorConfig({ DATABASE_URL, CLAIM_MIN_IDLE_TIME_MS: '1000', HEARTBEAT_INTERVAL_MS: '1000' }),
    ).toThrow('CLAIM_MIN_IDLE_TIME_MS (1000) must be larger than HEARTBEAT_INTERVAL_MS (1000)');
  });
});
