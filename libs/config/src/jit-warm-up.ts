import { setFlagsFromString } from 'node:v8';

/**
 * V8 optimises a function once it has run about this many bytes of bytecode since its last tier-up; its default
 * (67,584 on Node 20) left a fresh coordinator and worker at two thirds of their speed for their first thousand runs:
 * a run's path crosses a few hundred functions that each run once or twice per request, so each needs hundreds of
 * requests to reach it. A quarter of it optimises them four times sooner, so the first minute after a deploy or a
 * scale-up is about as fast as the tenth (docs/benchmarks.md, "Near the floor from the first minute"); the steady state is the same.
 */
export const INTERRUPT_BUDGET = 16_384;

/**
 * Lowers V8's interrupt budget for this process (above), first thing at start, before any request's code has run:
 * on V8 11 (Node 20), where it was measured. A budget given on Node's command line (`node --interrupt-budget=…`) is
 * left as it is. (A worker hosted in a team's own app gets it from that app's `node` command line: README.)
 */
export function optimiseHotCodeSooner(
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
  v8Version: string = process.versions.v8,
): void {
  // Measured on V8 11 (Node 20) only; later V8s tier up by other counters, and an unknown flag prints an error line.
  if (Number(v8Version.split('.')[0]) !== 11) return;
  if (execArgv.some((arg) => arg.startsWith('--interrupt-budget') || arg.startsWith('--interrupt_budget'))) return;
  setFlags(`--interrupt-budget=${INTERRUPT_BUDGET}`);
}
