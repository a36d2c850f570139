import { InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';
import { isTimestamp, type JsonValue, RUN_STATUSES, type RunStatus } from '@nest-durable/common';

/** `--input`/`--data`: JSON text, or `@path` to read it from a file. */
export function parseJsonArgument(value: string): JsonValue {
  const fromFile = value.startsWith('@');
  const source = fromFile ? value.slice(1) : undefined;
  let text = value;
  if (source !== undefined) {
    try {
      text = readFileSync(source, 'utf8');
    } catch (error) {
      throw new InvalidArgumentError(`Cannot read ${source} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new InvalidArgumentError(`Not JSON (${(error as Error).message}).`);
  }
}

/** `--status queued,running,waiting`: run statuses, comma-separated. */
export function parseStatusesArgument(value: string): RunStatus[] {
  const statuses = value.split(',').map((status) => status.trim());
  const unknown = statuses.find((status) => !(RUN_STATUSES as readonly string[]).includes(status));
  if (unknown !== undefined) throw new InvalidArgumentError(`${JSON.stringify(unknown)} is not a run status (${RUN_STATUSES.join(', ')}).`);
  return statuses as RunStatus[];
}

export function parseIntegerArgument(value: string): number {
  if (!/^[+-]?\d+$/.test(value)) throw new InvalidArgumentError('Must be an integer.');
  return Number(value);
}

/**
 * A repeatable `--tag` into the tags gathered so far: `key<separator>value` (the value may contain the
 * separator; the coordinator checks the key and value themselves).
 */
export function tagArgument(separator: '=' | ':'): (value: string, tags?: Record<string, string>) => Record<string, string> {
  return (value, tags = {}) => {
    const split = value.indexOf(separator);
    if (split < 1) throw new InvalidArgumentError(`Must be key${separator}value.`);
    const key = value.slice(0, split);
    if (Object.hasOwn(tags, key)) throw new InvalidArgumentError(`Tag ${key} is given twice.`);
    return { ...tags, [key]: value.slice(split + 1) }; // a computed key is an own property, even `__proto__`
  };
}

/** A time option: an RFC 3339 timestamp, as the API takes it (with its offset, of a day the calendar has). */
export function parseTimeArgument(value: string): Date {
  if (!isTimestamp(value)) throw new InvalidArgumentError('Must be an ISO 8601 time with its offset, e.g. 2030-01-31T09:00:00Z.');
  return new Date(value);
}

/**
 * A limit of `wf workflows limits`: a positive number, or `none` to clear the one set through the API
 * (kept as the text: commander reads a parser's null as no value).
 */
export function parseLimitArgument(value: string): number | 'none' {
  if (value === 'none') return value;
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0) throw new InvalidArgumentError('Must be a number above 0, or none.');
  return number;
}
