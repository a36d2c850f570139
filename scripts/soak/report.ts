import { FAULT_LABELS, type FaultKind, MAJOR_FAULTS } from './faults';
import type { ModeResult } from './mode';
import type { SoakOptions } from './options';
import type { Recovery } from './recovery';
import type { Violations } from './violations';

const seconds = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? '–' : `${(ms / 1000).toFixed(1)} s`);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function workerKills(recoveries: Recovery[]): string {
  const kills = recoveries.filter((recovery) => recovery.fault.kind === 'kill-worker');
  if (kills.length === 0) return '–';
  const takeovers = kills.filter((kill) => kill.takenOverMs !== undefined).map((kill) => kill.takenOverMs!);
  const held = kills.reduce((sum, kill) => sum + kill.affected, 0);
  return `${kills.length}× (${held} runs held); taken over p50 ${seconds(percentile(takeovers, 50))}, max ${seconds(Math.max(...takeovers))}`;
}

function majorFault(recoveries: Recovery[], kind: FaultKind): string {
  const recovery = recoveries.find((candidate) => candidate.fault.kind === kind);
  if (!recovery) return '–';
  if (kind === 'sigstop-worker') return `${recovery.affected} runs held; taken over ${seconds(recovery.takenOverMs)}`;
  const down = recovery.fault.downMs !== undefined ? `down ${seconds(recovery.fault.downMs)}; ` : '';
  return `${down}throughput back ${seconds(recovery.throughputBackMs)}; ${recovery.affected} in flight done ${seconds(recovery.inFlightDoneMs)}`;
}

/** The summary: one column per mode, in markdown so it can go into docs/reliability.md as it is. */
export function summaryTable(options: SoakOptions, results: ModeResult[], violations: Violations): string {
  const rows: [string, (result: ModeResult) => string][] = [
    ['runs completed with the right output', (r) => (r.figures ? `${r.figures.completedRight}/${r.figures.planned}` : 'not checked')],
    ['steps recorded twice or wrong', (r) => String(violations.in(r.mode).filter((v) => v.check === 'each step recorded once').length)],
    [
      'steps executed more than once (allowed)',
      (r) =>
        r.figures
          ? `${r.figures.stepsExecutedTwice} of ${r.figures.stepsRecorded} (${((100 * r.figures.stepsExecutedTwice) / Math.max(1, r.figures.stepsRecorded)).toFixed(2)}%)`
          : '–',
    ],
    ['invalid transition histories', (r) => (r.figures ? String(r.figures.invalidChains) : '–')],
    [
      'runs written by a worker that no longer held them',
      (r) => String(violations.in(r.mode).filter((v) => v.check === 'writes only from the claim holder').length),
    ],
    ['processes that exited on their own', (r) => String(violations.in(r.mode).filter((v) => v.check === 'no process exits on its own').length)],
    ['other violations', (r) => String(violations.in(r.mode).filter((v) => !COUNTED.has(v.check)).length)],
    [FAULT_LABELS['kill-worker'], (r) => workerKills(r.recoveries)],
    ...MAJOR_FAULTS.map((kind) => [FAULT_LABELS[kind], (r: ModeResult) => majorFault(r.recoveries, kind)] as [string, (r: ModeResult) => string]),
    [
      'short runs, start to finish: p50 / p99 / max',
      (r) =>
        r.shortRunMs?.length
          ? `${seconds(percentile(r.shortRunMs, 50))} / ${seconds(percentile(r.shortRunMs, 99))} / ${seconds(Math.max(...r.shortRunMs))}`
          : '–',
    ],
    ['start requests that failed (retried)', (r) => String(r.failedStarts)],
    ['takeovers from live workers (away from faults)', (r) => (r.takeovers ? `${r.takeovers.total} (${r.takeovers.unexplained})` : '–')],
    ['dead letters: outbox / stream', (r) => (r.deadLetters ? `${r.deadLetters.outbox} / ${r.deadLetters.stream}` : '–')],
    ['deadlocks in the PostgreSQL log', (r) => String(r.deadlocks)],
    ['wall time', (r) => seconds(r.wallMs)],
  ];
  const header = `| ${options.runs} runs per mode, ${options.workers} workers × ${options.concurrency} | ${results.map((r) => r.mode).join(' | ')} |`;
  const lines = [header, `|---|${results.map(() => '---|').join('')}`];
  for (const [label, cell] of rows) lines.push(`| ${label} | ${results.map(cell).join(' | ')} |`);
  return lines.join('\n');
}

const COUNTED = new Set([
  'each step recorded once',
  'no process exits on its own',
  'every run completes',
  'right output',
  'valid transition history',
  'writes only from the claim holder',
]);

/** Each violation in a line, the first few of each kind with their evidence. */
export function violationReport(violations: Violations, examplesPerCheck = 3): string {
  const groups = new Map<string, typeof violations.list>();
  for (const violation of violations.list) {
    const key = `${violation.scope}: ${violation.check}`;
    groups.set(key, [...(groups.get(key) ?? []), violation]);
  }
  const out: string[] = [];
  for (const [key, list] of groups) {
    out.push(`\n=== VIOLATION ${key} (${list.length}) ===`);
    list.forEach((violation, i) => {
      if (i >= examplesPerCheck) return;
      out.push(`- ${violation.message}`);
      for (const evidence of violation.evidence) out.push(indent(evidence));
    });
    if (list.length > examplesPerCheck) out.push(`  … and ${list.length - examplesPerCheck} more like it (all in violations.json)`);
  }
  return out.join('\n');
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
