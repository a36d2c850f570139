// `npm run bench -- --history`: the engine with a long history behind it. HTTP mode, W1, W2 and W3a (bench/run.ts's
// workloads) on an empty database and on a copy of a template holding millions of finished runs (fill.ts,
// history-template.ts), alternated; then retention deleting on such a copy, against W1's drain rate and W2 with
// retention off on the same database. Writes bench/results/history-<time>.md, and history-latest.md unless
// --retention-only left the comparison out.
//
//   npm run bench -- --history [--runs 5000000] [--pairs 2] [--rebuild] [--retention-only] [--retention 'name:VAR=value,…;…']
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { uuidv7Floor } from '../libs/persistence/src/ids';
import type { HistoryShape } from './fill';
import { freeBytes, gigabytes, historyTemplate, type Template } from './history-template';
import type { BenchOptions, Result } from './run';
import { BenchDatabase, log, median, ROOT, round } from './support';

type BenchMode = (mode: 'http', options: BenchOptions) => Promise<Result>;

const DAY_MS = 86_400_000;
/** The history's runs finished over the last 30 days; the retention phase keeps 7 (the default): 77% past it. */
const SPAN_DAYS = 30;
const RETENTION_DAYS = 7;
const WORKLOADS: BenchOptions['skip'] = ['W3b', 'W4'];
/** W2's probes here: its p99 is compared, and 300 probes (the bench's own W2) leave it to the 3 slowest. */
const W2_PROBES = 2_000;
/** Retention off: the comparison is of the history's size alone. */
const KEEP = { RUN_RETENTION_MS: '0' };
const DELETE = { RUN_RETENTION_MS: String(RETENTION_DAYS * DAY_MS), RETENTION_INTERVAL_MS: '1000' };

/** The measures compared, and whether more is better. */
const MEASURES: [string, (r: Result) => number, 'higher' | 'lower'][] = [
  ['W1 drain (runs/s)', (r) => r.w1DrainPerSecond, 'higher'],
  ['W1 create+drain (runs/s)', (r) => r.w1CreateDrainPerSecond, 'higher'],
  ['W2 start p50 (ms)', (r) => r.w2StartP50, 'lower'],
  ['W2 start p99 (ms)', (r) => r.w2StartP99, 'lower'],
  ['W2 result p50 (ms)', (r) => r.w2ResultP50, 'lower'],
  ['W2 result p99 (ms)', (r) => r.w2ResultP99, 'lower'],
  ['W3a 10-step chain p50 (ms)', (r) => r.w3aP50, 'lower'],
];
/** "Within 10% of an empty database" (issue 36). */
const TOLERANCE = 0.1;

const option = (argv: string[], name: string, fallback: number) => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : fallback);

/** A file copy of the template, for one measurement (the caller drops it). */
async function copy(template: Template): Promise<BenchDatabase> {
  if (freeBytes() < template.bytes * 1.1) throw new Error(`history: ${gigabytes(freeBytes())} free on /, a copy takes ${gigabytes(template.bytes)}`);
  const started = performance.now();
  const db = await BenchDatabase.create('history', template.name);
  log(`history: copied the template in ${round((performance.now() - started) / 1000, 0)} s`);
  return db;
}

/** The history's own runs (older than the copy), counted from the table. */
async function historyRuns(db: BenchDatabase): Promise<number> {
  return Number((await db.client.query(`SELECT count(*) FROM runs WHERE id < $1`, [uuidv7Floor(db.createdAt)])).rows[0].count);
}

/** One way of running retention in the retention phase: its name in the table and the coordinator's settings. */
interface RetentionPhase {
  name: string;
  env: Record<string, string>;
}

/**
 * The retention phase's settings, measured against retention off: the daemon at its defaults (half busy, batches of
 * 500: its top speed unless a share is raised), and paced to about W1's rate (a quarter busy, smaller batches; a rate
 * estimated on this machine, and printed beside it): what keeping pace with creation at W1's rate costs, rather
 * than catching up. Override with `--retention 'name:VAR=value,VAR=value;…'`.
 */
const RETENTION_PHASES: RetentionPhase[] = [
  { name: 'at the defaults (50% busy, batches of 500)', env: {} },
  { name: 'paced (25% busy, batches of 250)', env: { RETENTION_BUSY_PERCENT: '25', RETENTION_BATCH_SIZE: '250' } },
];

/** What a phase may set: a misspelt name would leave the default under the phase's label. */
const RETENTION_SETTINGS = ['RETENTION_BUSY_PERCENT', 'RETENTION_BATCH_SIZE', 'RETENTION_INTERVAL_MS', 'RUN_RETENTION_MS', 'RUN_RETENTION_OVERRIDES'];
const RETENTION_USAGE = `--retention takes phases like 'slow:RETENTION_BUSY_PERCENT=10,RETENTION_BATCH_SIZE=100;fast:RETENTION_BUSY_PERCENT=90'`;

function retentionPhases(argv: string[]): RetentionPhase[] {
  if (!argv.includes('--retention')) return RETENTION_PHASES;
  const text = argv[argv.indexOf('--retention') + 1] ?? '';
  return text.split(';').map((phase) => {
    const match = /^([^:]+):(.+)$/.exec(phase.trim());
    if (!match) throw new Error(RETENTION_USAGE);
    const env = match[2].split(',').map((pair) => {
      const setting = /^([A-Z_]+)=(.*)$/.exec(pair.trim());
      if (!setting || !RETENTION_SETTINGS.includes(setting[1])) throw new Error(`${RETENTION_USAGE}; settings: ${RETENTION_SETTINGS.join(', ')}`);
      return [setting[1], setting[2]];
    });
    return { name: match[1], env: Object.fromEntries(env) };
  });
}

interface Deleting {
  phase: RetentionPhase;
  results: Result[];
  deletedPerSecond: number;
}

interface Retention {
  kept: Result[];
  deleting: Deleting[];
  leftToDelete: number;
}

/**
 * On one copy, alternated `pairs` times: W1, W2 and W3a with retention off and with the daemon deleting in each of
 * `phases`, each pair starting from another (the copy's backlog shrinks as they delete, and autovacuum follows
 * them); the deleting phases' rate counted from the table over each measurement, the coordinator's start included
 * (the daemon starts with it).
 */
async function retention(benchMode: BenchMode, template: Template, pairs: number, phases: RetentionPhase[]): Promise<Retention> {
  const db = await copy(template);
  try {
    const off = { phase: { name: 'retention off', env: KEEP }, results: [] as Result[], deleted: 0, seconds: 0 };
    const deleting = phases.map((phase) => ({ phase: { ...phase, env: { ...DELETE, ...phase.env } }, results: [] as Result[], deleted: 0, seconds: 0 }));
    const all = [off, ...deleting];
    for (let pair = 1; pair <= pairs; pair++) {
      for (const measured of all.map((_, i) => all[(i + pair - 1) % all.length])) {
        log(`history: retention pair ${pair} of ${pairs}, ${measured.phase.name}`);
        const before = await historyRuns(db);
        const started = performance.now();
        measured.results.push(await benchMode('http', { database: db, coordinatorEnv: measured.phase.env, skip: WORKLOADS, w2Runs: W2_PROBES }));
        measured.seconds += (performance.now() - started) / 1000;
        measured.deleted += before - (await historyRuns(db));
      }
    }
    const { rows } = await db.client.query(`SELECT count(*) FROM runs WHERE id < $1 AND finished_at < now() - $2 * interval '1 day'`, [
      uuidv7Floor(db.createdAt),
      RETENTION_DAYS,
    ]);
    return {
      kept: off.results,
      deleting: deleting.map(({ phase, results, deleted, seconds }) => ({ phase, results, deletedPerSecond: round(deleted / seconds, 0) })),
      leftToDelete: Number(rows[0].count),
    };
  } finally {
    await db.drop();
  }
}

const percent = (from: number, to: number) => `${to >= from ? '+' : ''}${round(((to - from) / from) * 100, 1)}%`;

/** The comparison of an empty database with the history (none with --retention-only). */
function sizeSection(empty: Result[], full: Result[]): string[] {
  if (empty.length === 0) return ['The comparison with an empty database was not run (`--retention-only`).'];
  const rows = MEASURES.map(([name, value, better]) => {
    const a = median(empty.map(value));
    const b = median(full.map(value));
    const worse = better === 'higher' ? (a - b) / a : (b - a) / a;
    const verdict = worse > TOLERANCE ? `**missed** (${round(worse * 100, 1)}% worse)` : 'within 10%';
    return `| ${name} | ${empty.map(value).join(', ')} | ${full.map(value).join(', ')} | ${round(a, 2)} | ${round(b, 2)} | ${percent(a, b)} | ${verdict} |`;
  });
  return ['| measure | empty | history | median empty | median history | difference | target: within 10% |', '|---|---|---|---|---|---|---|', ...rows];
}

function retentionSection(deletion: Retention, w1: number): string[] {
  /** The median of a measure over a phase's runs, and the runs' own values. */
  const cell = (results: Result[], value: (r: Result) => number) => `${round(median(results.map(value)), 2)} (${results.map(value).join(', ')})`;
  const row = (name: string, results: Result[], deleted: number) =>
    `| ${name} | ${MEASURES.map(([, value]) => cell(results, value)).join(' | ')} | ${deleted} |`;
  const verdicts = deletion.deleting.map(({ phase, results, deletedPerSecond }) => {
    const change = (value: (r: Result) => number) => percent(median(deletion.kept.map(value)), median(results.map(value)));
    return (
      `- ${phase.name}: keeps pace ${deletedPerSecond >= w1 ? 'yes' : deletion.leftToDelete === 0 ? 'unknown (it ran out of runs)' : '**no**'} (${deletedPerSecond} runs deleted/s against W1's drain of ${w1}); ` +
      `while it deletes, against retention off: W2 result p99 ${change((r) => r.w2ResultP99)}, start p99 ${change((r) => r.w2StartP99)}, ` +
      `result p50 ${change((r) => r.w2ResultP50)}, start p50 ${change((r) => r.w2StartP50)}; W1 drain ${change((r) => r.w1DrainPerSecond)}; W3a p50 ${change((r) => r.w3aP50)}.`
    );
  });
  return [
    `Retention on one copy, alternated ${deletion.kept.length} times (window ${RETENTION_DAYS} days: ${round(((SPAN_DAYS - RETENTION_DAYS) / SPAN_DAYS) * 100, 0)}% of the history past it; RETENTION_INTERVAL_MS=1000):`,
    '',
    `| phase (median, then each run) | ${MEASURES.map(([name]) => name).join(' | ')} | runs deleted/s |`,
    `|---|${MEASURES.map(() => '---|').join('')}---|`,
    row('retention off', deletion.kept, 0),
    ...deletion.deleting.map(({ phase, results, deletedPerSecond }) => row(`deleting, ${phase.name}`, results, deletedPerSecond)),
    '',
    ...verdicts,
    `- ${deletion.leftToDelete === 0 ? 'It ran out of runs to delete, so the rates are lower bounds' : `${deletion.leftToDelete.toLocaleString()} runs were left to delete`}.`,
  ];
}

function markdown(template: Template, shape: HistoryShape, empty: Result[], full: Result[], deletion: Retention, when: string): string {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${round(totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`;
  // Keeping pace is judged against W1 on the history (retention off on the retention copy without the comparison).
  const w1 = median((full.length > 0 ? full : deletion.kept).map((r) => r.w1DrainPerSecond));
  return [
    `History run ${when} on ${machine}; HTTP mode, ${deletion.kept.length} pairs, W2 of ${W2_PROBES.toLocaleString()} probes, W3b and W4 not run.`,
    `History: template \`${template.name}\`, ${gigabytes(template.bytes)}: ${template.built}; ${shape.runs.toLocaleString()} runs of \`chain\` (1-3 steps), \`probe\` and \`echo\`, 3 transitions each.`,
    '',
    ...sizeSection(empty, full),
    '',
    ...retentionSection(deletion, w1),
    '',
    `The template stays for the next run (\`--rebuild\` to make it again); drop it with \`psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE ${template.name}'\` (older ones: \`psql -h 127.0.0.1 -U postgres -c "SELECT datname FROM pg_database WHERE datname LIKE 'wf_history_%'"\`).`,
    '',
  ].join('\n');
}

export async function history(argv: string[], benchMode: BenchMode): Promise<void> {
  const shape: HistoryShape = { runs: option(argv, 'runs', 5_000_000), oldestDays: SPAN_DAYS, newestDays: 0 };
  const phases = retentionPhases(argv); // before the long part, so a mistyped --retention costs nothing
  const pairs = option(argv, 'pairs', 2);
  const template = await historyTemplate(shape, argv.includes('--rebuild'));
  const empty: Result[] = [];
  const full: Result[] = [];
  for (let pair = 1; pair <= pairs && !argv.includes('--retention-only'); pair++) {
    log(`history: pair ${pair} of ${pairs}, empty database`);
    empty.push(await benchMode('http', { coordinatorEnv: KEEP, skip: WORKLOADS, w2Runs: W2_PROBES }));
    log(`history: pair ${pair} of ${pairs}, ${shape.runs.toLocaleString()} runs behind`);
    const db = await copy(template);
    try {
      full.push(await benchMode('http', { database: db, coordinatorEnv: KEEP, skip: WORKLOADS, w2Runs: W2_PROBES }));
    } finally {
      await db.drop();
    }
  }
  const deletion = await retention(benchMode, template, pairs, phases);
  const when = new Date().toISOString();
  const table = markdown(template, shape, empty, full, deletion, when);
  process.stdout.write(`\n${table}\n`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `history-${when.replace(/[:.]/g, '-')}.md`), table);
  // history-latest.md is the whole bench's: a run of its retention phase alone does not replace it.
  if (!argv.includes('--retention-only')) writeFileSync(join(dir, 'history-latest.md'), table);
}
