import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { Client, Pool } from 'pg';
import { PooledClient } from './pooled-client';

const message = (type: string, body: Buffer) => {
  const header = Buffer.alloc(5);
  header.write(type, 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};
const AUTHENTICATION_OK = message('R', Buffer.from([0, 0, 0, 0]));
const READY_FOR_QUERY = message('Z', Buffer.from('I'));
const TERMINATED = message(
  'E',
  Buffer.concat([
    ...['SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command'].map((field) => Buffer.from(`${field}\0`)),
    Buffer.from([0]),
  ]),
);

/**
 * A PostgreSQL stand-in: it accepts each session and, with `terminateAtOnce`, terminates it in the same
 * write as its first ReadyForQuery (as a backend killed right after its start-up does); otherwise when
 * `terminate()` is called.
 */
async function fakeServer(terminateAtOnce: boolean): Promise<{ server: Server; port: number; terminate(): void }> {
  const sessions: Socket[] = [];
  const server = createServer((socket) => {
    sessions.push(socket);
    socket.once('data', () =>
      terminateAtOnce
        ? socket.end(Buffer.concat([AUTHENTICATION_OK, READY_FOR_QUERY, TERMINATED]))
        : socket.write(Buffer.concat([AUTHENTICATION_OK, READY_FOR_QUERY])),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    port: (server.address() as { port: number }).port,
    terminate: () => {
      for (const socket of sessions) socket.end(TERMINATED);
    },
  };
}

/** A plain client that counts the 'error' events it emits with no listener instead of throwing them. */
class UnheardErrors extends Client {
  static count = 0;
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && this.listenerCount('error') === 0) {
      UnheardErrors.count++;
      return false;
    }
    return super.emit(event, ...args);
  }
}

describe('PooledClient', () => {
  let server: Server | undefined;
  let pool: Pool | undefined;

  afterEach(async () => {
    await pool?.end();
    server?.close();
  });

  const poolOn = (port: number, client: typeof Client) => new Pool({ host: '127.0.0.1', port, user: 'test', database: 'test', Client: client });

  it('is needed: a plain client handed out in the read that terminates its session emits its error unheard', async () => {
    const fake = await fakeServer(true);
    server = fake.server;
    pool = poolOn(fake.port, UnheardErrors);
    const client = await pool.connect();
    expect(UnheardErrors.count).toBe(1);
    client.release(true);
  });

  it('survives that, and its statements fail', async () => {
    const fake = await fakeServer(true);
    server = fake.server;
    pool = poolOn(fake.port, PooledClient);
    const client = await pool.connect();
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release(true);
  });

  it('leaves the pool to report and drop an idle client whose session died', async () => {
    const fake = await fakeServer(false);
    server = fake.server;
    pool = poolOn(fake.port, PooledClient);
    const lost = once(pool, 'error');
    (await pool.connect()).release();
    expect(pool.idleCount).toBe(1);
    fake.terminate();
    const [error] = await lost;
    expect((error as { code?: string }).code).toBe('57P01');
    expect(pool.totalCount).toBe(0);
  });
});
