import type { ProcessExit } from '../../test/support/processes';

/** A broken promise, with what shows it (rows, log lines). */
export interface Violation {
  /** The mode it was seen in (or the soak as a whole). */
  scope: string;
  check: string;
  message: string;
  evidence: string[];
}

export class Violations {
  readonly list: Violation[] = [];
  /** Where what is added now belongs: the mode being soaked. */
  scope = 'soak';

  add(check: string, message: string, evidence: string[] = []): void {
    this.list.push({ scope: this.scope, check, message, evidence });
  }

  in(scope: string): Violation[] {
    return this.list.filter((violation) => violation.scope === scope);
  }
}

export function describeExit(exit: ProcessExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/** The last `lines` lines of a log. */
export function tail(log: string, lines = 40): string {
  const all = log.trimEnd().split('\n');
  return (all.length > lines ? [`… (${all.length - lines} earlier lines)`, ...all.slice(-lines)] : all).join('\n');
}

/**
 * Tells the exits the soak caused from those it did not: every watched process that ends without
 * having been expected to is a violation, reported with the end of its log, and is replaced.
 */
export class Watchdog {
  private readonly expected = new WeakSet<Promise<ProcessExit>>();
  private closed = false;

  constructor(private readonly violations: Violations) {}

  /** The process whose exit is `exited` is about to be ended by the soak. */
  expect(exited: Promise<ProcessExit>): void {
    this.expected.add(exited);
  }

  watch(name: string, exited: Promise<ProcessExit>, log: () => string, replace: () => Promise<void>): void {
    void exited.then((exit) => {
      if (this.closed || this.expected.has(exited)) return;
      this.violations.add('no process exits on its own', `${name} exited on its own (${describeExit(exit)}) at ${new Date().toISOString()}`, [
        `${name}:\n${tail(log())}`,
      ]);
      replace().catch((error: Error) => this.violations.add('no process exits on its own', `could not replace ${name}: ${error.message}`));
    });
  }

  /** From now on the soak ends everything: exits are no longer watched. */
  close(): void {
    this.closed = true;
  }
}
