import { ConsoleLogger, type LogLevel } from '@nestjs/common';

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * The apps' logger: JSON lines (one object per line, structured fields such as runId, workflow and
 * workerId at the top level) or pretty text in a terminal; everything from `level` up.
 */
export function createAppLogger(format: 'json' | 'pretty', level: Exclude<LogLevel, 'fatal'>): ConsoleLogger {
  return new ConsoleLogger({
    json: format === 'json',
    colors: format === 'pretty',
    flattenParams: true,
    logLevels: LEVELS.slice(0, LEVELS.indexOf(level) + 1),
    redact: ['authorization', 'password', 'token'],
  });
}
