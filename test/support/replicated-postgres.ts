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
  /** The other node: the synchronous standby, or after a failover the dead (or stalled) former primary. */
  private other: PostgresServer;
  private standbyAttached = false;

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
    try {
      await pair.attachStandby();
    } catch (error) {
      // Neither node outlives a pair that never started.
      await pair.destroy();
      throw error;
    }
    return pair;
  }

  /** Both nodes, primary or not, as libpq's multi-host URI: what a coordinator's DATABASE_URL says. */
  url(database: string): string {
    const [a, b] = [this.primary.port, this.other.port].sort((x, y) => x - y);
    return `postgres://postgres@127.0.0.1:${a},127.0.0.1:${b}/${database}?target_session_attrs=read-write`;
  }

  /** The standby's database (read-only), for the test's own statements. */
  standbyUrl(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.other.port}/${database}`;
  }

  /** The current primary's database, for the test's own statements. */
  primaryUrl(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.primary.port}/${database}`;
  }

  /** Both nodes: the primary, then the standby (or the dead former primary). */
  get nodes(): [PostgresServer, PostgresServer] {
    return [this.primary, this.other];
  }

  /** Whether the primary has its standby (none after a failover or a promotion, until `attachStandby()`). */
  get replicating(): boolean {
    return this.standbyAttached;
  }

  /** Every server process of the pair, for the server logs. */
  get output(): string {
    return `primary (port ${this.primary.port}):\n${this.primary.output}\nother (port ${this.other.port}):\n${this.other.output}`;
  }

  /**
   * Stops the primary's WAL sender (SIGSTOP): from now on nothing the primary writes leaves it, so every commit after
   * this is one the standby lacks. With synchronous commit the primary waits for the standby and acknowledges none of
   * them; without, they are acknowledged, and lost by `failover()`, which kills the sender with its server. (Not the
   * standby's WAL receiver: what the sender had written meanwhile would wait in the receiver's socket buffer, and
   * reach the standby once the receiver runs again, before the promotion.)
   */
  async pauseReplication(): Promise<void> {
    const [sender] = await sql<{ pid: number }>(this.primary.url, `SELECT pid FROM pg_stat_replication WHERE application_name = '${STANDBY_NAME}'`);
    if (!sender) throw new Error('the primary has no WAL sender to pause');
    process.kill(sender.pid, 'SIGSTOP');
  }

  /** `kill -9` of the primary (a paused WAL sender with it); then the standby is promoted and becomes the primary. Resolves once it takes writes. */
  async failover(): Promise<void> {
    const [dead, promoted] = [this.primary, this.other];
    await dead.kill();
    await sql(promoted.url, 'SELECT pg_promote(true, 60)');
    [this.primary, this.other] = [promoted, dead];
    this.standbyAttached = false;
  }

  /**
   * The primary stalls (SIGSTOP of its postmaster and every backend: its connections stay open and unanswered, as
   * a host that vanished behind a partition looks to TCP), then the standby is promoted. `destroy()` or
   * `attachStandby()` kills the stalled node.
   */
  async stallPrimaryAndPromote(): Promise<void> {
    const [stalled, promoted] = [this.primary, this.other];
    stalled.signalAll('SIGSTOP');
    await sql(promoted.url, 'SELECT pg_promote(true, 60)');
    [this.primary, this.other] = [promoted, stalled];
    this.standbyAttached = false;
  }

  /**
   * Makes the other node a synchronous standby of the primary: a copy of the primary's data directory taken while
   * the primary is briefly stopped (a cold base backup; npm's PostgreSQL ships no pg_basebackup), set to stream
   * from the primary, which then waits for it at every commit.
   */
  async attachStandby(): Promise<void> {
    const primary = this.primary;
    // Killed first: a stalled former primary would never answer a shutdown.
    await this.other.kill();
    await this.other.destroy();
    const standby = new PostgresServer(this.other.port, this.settings, { initdb: false });
    // Its own from here, so that destroy() stops it whatever fails below.
    this.other = standby;
    await primary.stop();
    execFileSync('cp', ['-a', primary.dataDir, standby.dataDir], { ...primary.owner });
    rmSync(join(standby.dataDir, 'postmaster.pid'), { force: true });
    // The copy's own settings (not its primary's: a promoted standby must not wait for a standby it does not have).
    this.configure(standby, `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}'\n`);
    this.configure(primary, `synchronous_standby_names = '${STANDBY_NAME}'\nwal_keep_size = '256MB'\n`);
    this.configure(standby, '', 'standby.signal');
    await primary.start();
    await standby.start();
    this.standbyAttached = true;
    await eventually(
      'the standby to replicate synchronously',
      async () => (await sql(primary.url, `SELECT 1 FROM pg_stat_replication WHERE application_name = '${STANDBY_NAME}' AND sync_state = 'sync'`)).length === 1,
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
    await sql(old.url, 'ALTER SYSTEM SET default_transaction_read_only = on');
    await sql(old.url, 'SELECT pg_reload_conf()');
    await sql(promoted.url, 'SELECT pg_promote(true, 60)');
    [this.primary, this.other] = [promoted, old];
    this.standbyAttached = false;
  }

  /** Writes `text` as a file of `server`'s data directory (postgresql.auto.conf unless named), owned by the server's user. */
  private configure(server: PostgresServer, text: string, file = 'postgresql.auto.conf'): void {
    const path = join(server.dataDir, file);
    writeFileSync(path, text);
    if (server.owner.uid !== undefined) chownSync(path, server.owner.uid, server.owner.gid!);
  }
}

/** One statement on `url`, in a session of its own: its rows. */
export async function sql<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}
