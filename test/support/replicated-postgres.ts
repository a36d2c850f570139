import { execFileSync } from 'node:child_process';
import { chownSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { eventually } from './poll';
import { PostgresServer } from './postgres-server';
import { freePort } from './processes';

const STANDBY_NAME = 'standby';

/**
 * A PostgreSQL primary with one synchronous standby (streaming replication, `synchronous_commit` on), the test's
 * own, from the binaries npm ships: a commit is acknowledged only once the standby has it. `failover()` kills the
 * primary (`kill -9` of all its processes) and promotes the standby (`pg_promote()`), as an HA manager would (the
 * promoted server runs alone, so its commits wait for no one); `attachStandby()` makes the dead node a standby of
 * the new primary again. The two nodes keep their ports throughout, so `url()` names them both, as DATABASE_URL
 * does for a coordinator that follows the primary.
 */
export class ReplicatedPostgres {
  /** The node that takes writes now. */
  primary: PostgresServer;
  /** The other node: the synchronous standby, or after a failover the dead former primary. */
  private other: PostgresServer;

  private constructor(
    primary: PostgresServer,
    private readonly settings: Record<string, string>,
  ) {
    this.primary = primary;
    this.other = primary;
  }

  /** `settings` apply to both nodes (a hot standby needs max_connections and the like at least as large as its primary's). */
  static async start(settings: Record<string, string> = {}): Promise<ReplicatedPostgres> {
    const pair = new ReplicatedPostgres(new PostgresServer(await freePort(), settings), settings);
    pair.other = new PostgresServer(await freePort(), settings, { initdb: false });
    await pair.attachStandby();
    return pair;
  }

  /** Both nodes, primary or not, as libpq's multi-host URI: what a coordinator's DATABASE_URL says. */
  url(database: string): string {
    const [a, b] = [this.primary.port, this.other.port].sort((x, y) => x - y);
    return `postgres://postgres@127.0.0.1:${a},127.0.0.1:${b}/${database}?target_session_attrs=read-write`;
  }

  /** The current primary's database, for the test's own statements. */
  primaryUrl(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.primary.port}/${database}`;
  }

  /** Both nodes: the primary, then the standby (or the dead former primary). */
  get nodes(): [PostgresServer, PostgresServer] {
    return [this.primary, this.other];
  }

  /** Whether the primary has its standby (none after a failover, until `attachStandby()`). */
  get replicating(): boolean {
    return this.other.alive;
  }

  /** Every server process of the pair, for the server logs. */
  get output(): string {
    return `primary (port ${this.primary.port}):\n${this.primary.output}\nother (port ${this.other.port}):\n${this.other.output}`;
  }

  /** `kill -9` of the primary; then the standby is promoted and becomes the primary. Resolves once it takes writes. */
  async failover(): Promise<void> {
    const [dead, promoted] = [this.primary, this.other];
    await dead.kill();
    await query(promoted.url, 'SELECT pg_promote(true, 60)');
    [this.primary, this.other] = [promoted, dead];
  }

  /**
   * Makes the other node a synchronous standby of the primary: a copy of the primary's data directory taken while
   * the primary is briefly stopped (a cold base backup; npm's PostgreSQL ships no pg_basebackup), set to stream
   * from the primary, which then waits for it at every commit.
   */
  async attachStandby(): Promise<void> {
    const primary = this.primary;
    await this.other.destroy();
    const standby = new PostgresServer(this.other.port, this.settings, { initdb: false });
    await primary.stop();
    execFileSync('cp', ['-a', primary.dataDir, standby.dataDir], { ...primary.owner });
    rmSync(join(standby.dataDir, 'postmaster.pid'), { force: true });
    // The copy's own settings (not its primary's: a promoted standby must not wait for a standby it does not have).
    this.configure(standby, `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}'\n`);
    this.configure(primary, `synchronous_standby_names = '${STANDBY_NAME}'\nwal_keep_size = '256MB'\n`);
    this.configure(standby, '', 'standby.signal');
    await primary.start();
    await standby.start();
    this.other = standby;
    await eventually(
      'the standby to replicate synchronously',
      async () =>
        (await query(primary.url, `SELECT 1 FROM pg_stat_replication WHERE application_name = '${STANDBY_NAME}' AND sync_state = 'sync'`)).length === 1,
      30_000,
    );
  }

  /** Both nodes killed (their data is thrown away: no shutdown to wait for) and removed. */
  async destroy(): Promise<void> {
    for (const node of [this.primary, this.other]) {
      await node.kill();
      await node.destroy();
    }
  }

  /**
   * The other half of a switchover where the old primary lives on: it is made read-only
   * (`default_transaction_read_only`, which its open sessions take up too), then the standby is promoted. Its
   * sessions keep answering, but refuse every write (SQLSTATE 25006).
   */
  async promoteStandbyLeavingPrimaryReadOnly(): Promise<void> {
    const [old, promoted] = [this.primary, this.other];
    await query(old.url, 'ALTER SYSTEM SET default_transaction_read_only = on');
    await query(old.url, 'SELECT pg_reload_conf()');
    await query(promoted.url, 'SELECT pg_promote(true, 60)');
    [this.primary, this.other] = [promoted, old];
  }

  /** Writes `text` as a file of `server`'s data directory (postgresql.auto.conf unless named), owned by the server's user. */
  private configure(server: PostgresServer, text: string, file = 'postgresql.auto.conf'): void {
    const path = join(server.dataDir, file);
    writeFileSync(path, text);
    if (server.owner.uid !== undefined) chownSync(path, server.owner.uid, server.owner.gid!);
  }
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}
