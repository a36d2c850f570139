import type { LoggerService } from '@nestjs/common';
import { format } from 'node:util';

/**
 * The logger of the apps tests boot in this process: lines are kept for the test that is running and
 * printed only if it fails (see quiet-environment.js), so a passing suite prints nothing of theirs.
 */
export class CapturedLogger implements LoggerService {
  log(message: unknown, ...rest: unknown[]) {
    capture('LOG', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    capture('ERROR', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    capture('WARN', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    capture('DEBUG', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    capture('VERBOSE', message, rest);
  }
}

/** Where the quiet test environment collects the lines of the test running now. */
declare global {
  var __capturedLogs: string[] | undefined;
}

function capture(level: string, message: unknown, rest: unknown[]): void {
  const context = typeof rest[rest.length - 1] === 'string' ? `[${rest.pop() as string}] ` : '';
  const line = `${new Date().toISOString()} ${level} ${context}${format(message, ...rest)}`;
  globalThis.__capturedLogs ??= [];
  globalThis.__capturedLogs.push(line);
}

export const capturedLogger = new CapturedLogger();

/**
 * Output of a process a test started, kept like the apps' log lines: shown only if that test fails.
 * Outside Jest (the soak script starts processes with the same helpers) nobody would read or clear it.
 */
export function captureOutput(source: string, chunk: string): void {
  if (process.env.JEST_WORKER_ID === undefined) return;
  globalThis.__capturedLogs ??= [];
  for (const line of chunk.split('\n')) if (line.trim()) globalThis.__capturedLogs.push(`[${source}] ${line}`);
}
