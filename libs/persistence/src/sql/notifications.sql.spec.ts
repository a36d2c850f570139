import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { eventually } from '../../../../test/support/poll';
import { sessionExecutor } from '../session-executor';
import { LISTEN_PROBE, listen, probeListenSession } from './notifications.sql';

describe('notifications.sql', () => {
  let db: TestDatabase;
  let session: Client;
  const heard: { channel: string; payload: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('notifications_sql');
    session = new Client({ connectionString: db.url });
    await session.connect();
    session.on('notification', (message) => heard.push({ channel: message.channel, payload: message.payload ?? '' }));
  });

  afterAll(async () => {
    await session?.end();
    await db?.drop();
  });

  it('hears what is notified on the channels it listens to, a name quoted as it is', async () => {
    await listen(sessionExecutor(session), 'wf_runs_ready');
    await listen(sessionExecutor(session), 'Odd "channel"');
    await db.sql(`SELECT pg_notify('wf_runs_ready', 'echo:1'), pg_notify('Odd "channel"', 'x'), pg_notify('odd "channel"', 'not heard')`);
    await eventually('both notifications', async () => heard.length >= 2);
    expect(heard).toEqual([
      { channel: 'wf_runs_ready', payload: 'echo:1' },
      { channel: 'Odd "channel"', payload: 'x' },
    ]);
  });

  it('probes the session with a statement pg_stat_activity shows', async () => {
    await probeListenSession(sessionExecutor(session));
    const [{ pid }] = (await session.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows;
    await probeListenSession(sessionExecutor(session));
    expect(await db.sql(`SELECT query FROM pg_stat_activity WHERE pid = $1`, [pid])).toEqual([{ query: LISTEN_PROBE }]);
  });
});
