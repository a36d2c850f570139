import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

export interface RunRow {
  id: string;
  key: string | null;
  status: string;
  revision: number;
  output: unknown;
  error: unknown;
  claimedBy: string | null;
  createdAt: number;
  finishedAt: number | null;
}

export interface StepRow {
  key: string;
  kind: string;
  seq: number;
  status: string;
  output: unknown;
  createdAt: number;
}

export interface TransitionRow {
  from: string | null;
  to: string;
  revision: number;
  workerId: string | null;
  at: number;
}

/** What the database and the side-effect journals hold at the end of a mode. */
export interface SoakState {
  runs: RunRow[];
  steps: Map<string, StepRow[]>;
  transitions: Map<string, TransitionRow[]>;
  /** How often each step executed, by "<run id> <step>". */
  executions: Map<string, number>;
  /** Which workers executed each step, by "<run id> <step>". */
  executors: Map<string, Set<string>>;
}

const time = (value: Date | null) => (value ? value.getTime() : null);
/** A timestamp as epoch milliseconds with PostgreSQL's microseconds (a Date would cut them). */
const MS = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8 AS ${column.replace(/_at$/, '_ms')}`;

export async function readState(databaseUrl: string, journalDir: string): Promise<SoakState> {
  const db = new Client({ connectionString: databaseUrl });
  db.on('error', () => undefined);
  await db.connect();
  try {
    const runs = (
      await db.query(
        `SELECT id, idempotency_key, status, revision, output, error, claimed_by, created_at, finished_at FROM runs WHERE workflow = 'soak' ORDER BY id`,
      )
    ).rows.map((row) => ({
      id: row.id,
      key: row.idempotency_key,
      status: row.status,
      revision: row.revision,
      output: row.output,
      error: row.error,
      claimedBy: row.claimed_by,
      createdAt: row.created_at.getTime(),
      finishedAt: time(row.finished_at),
    }));
    const steps = group(
      (await db.query(`SELECT run_id, key, kind, seq, status, output, ${MS('created_at')} FROM tasks ORDER BY run_id, seq, key`)).rows,
      (row) => ({ key: row.key, kind: row.kind, seq: row.seq, status: row.status, output: row.output, createdAt: row.created_ms }),
    );
    const transitions = group(
      (await db.query(`SELECT run_id, from_status, to_status, revision, worker_id, ${MS('created_at')} FROM run_transitions ORDER BY run_id, id`)).rows,
      (row) => ({ from: row.from_status, to: row.to_status, revision: row.revision, workerId: row.worker_id, at: row.created_ms }),
    );
    return { runs, steps, transitions, ...readJournals(journalDir) };
  } finally {
    await db.end();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: rows of any query, each mapped by its caller
function group<T>(rows: { run_id: string }[], map: (row: any) => T): Map<string, T[]> {
  const byRun = new Map<string, T[]>();
  for (const row of rows) {
    const list = byRun.get(row.run_id) ?? [];
    list.push(map(row));
    byRun.set(row.run_id, list);
  }
  return byRun;
}

function readJournals(dir: string): Pick<SoakState, 'executions' | 'executors'> {
  const executions = new Map<string, number>();
  const executors = new Map<string, Set<string>>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.journal'))) {
    const worker = file.replace(/\.journal$/, '');
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line) continue;
      executions.set(line, (executions.get(line) ?? 0) + 1);
      const by = executors.get(line) ?? new Set<string>();
      executors.set(line, by.add(worker));
    }
  }
  return { executions, executors };
}
