import { setFlagsFromString } from 'node:v8';

/**
 * V8 optimises a function once it has run about this many bytes of bytecode since its last tier-up; its default
 * (67,584 on Node 20) left a fresh coordinator and worker at two thirds of their speed for their first thousand runs:
 * a run's path crosses a few hundred functions that each run once or twice per request, so each needs hundreds of
 * requests to reach it. A quarter of it optimises them four times sooner, so the first minute after a deploy or a
 * scale-up is about as fast as the tenth (docs/benchmarks.md, "Warm from the first minute"); the steady state is the same.
 */
export const INTERRUPT_BUDGET = 16_384;

/**
 * Lowers V8's interrupt budget for this process (above), first thing at start, before any request's code has run.
 * A budget given on Node's command line (`node --interrupt-budget=…`) is left as it is.
 */
export function optimiseHotCodeSooner(execArgv: readonly string[] = process.execArgv, setFlags: (flags: string) => void = setFlagsFromString): void {
  if (execArgv.some((arg) => arg.startsWith('--interrupt-budget') || arg.startsWith('--interrupt_budget'))) return;
  setFlags(`--interrupt-budget=${INTERRUPT_BUDGET}`);
}
