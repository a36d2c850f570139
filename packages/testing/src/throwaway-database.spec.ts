import { describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';
import { Client } from 'pg';
import { createThrowawayDatabase } from './throwaway-database';

/** Whether anything accepts connections on the port of `url`. */
function listening(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('createThrowawayDatabase', () => {
  it('without a server URL, starts an embedded PostgreSQL server for the database, and stops it when it is dropped', async () => {
    const db = await createThrowawayDatabase(undefined);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const [row] = (await client.query(`SELECT current_database() AS name`)).rows;
    await client.end();
    expect(row.name).toMatch(/^durable_test_[0-9a-f]{12}$/);
    await db.drop();
    expect(await listening(db.url)).toBe(false);
  }, 60_000);
});
