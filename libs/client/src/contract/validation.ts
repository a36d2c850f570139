import { InvalidRequestError } from './errors';

/**
 * One rule for every identifier that reaches the database columns and (later) Redis keys:
 * workflow names, versions, shards and event names. Keys are built by joining identifiers with
 * ':' so the character set excludes it.
 */
export const IDENTIFIER_MAX_LENGTH = 128;
const IDENTIFIER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Idempotency keys, worker ids, step keys and names are chosen by users: any printable text, bounded.
 * Not lone UTF-16 surrogates: UTF-8 cannot carry one, so it would be stored as U+FFFD and two keys
 * would become one.
 */
export const KEY_MAX_LENGTH = 255;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** JSON documents (run input, task output, run output) are bounded in size. */
export const JSON_MAX_BYTES = 1024 * 1024;

/**
 * Deepest nesting of arrays and objects in a request body, the body itself being level 1. Validation,
 * JSON.stringify and the driver all recurse into documents: bounded here, none of them can run out of
 * stack (they did at ~3,500 levels). A document inside the deepest envelope (a worker report) still
 * gets 124 levels.
 */
export const JSON_MAX_DEPTH = 128;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export function fail(reason: string, message: string): never {
  throw new InvalidRequestError(reason, message);
}

export function requireObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail('invalid_body', `${what} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** A JSON array of `min`-`max` items; the reason is `invalid_<field>`. */
export function requireArray(value: unknown, field: string, max: number, min = 1): unknown[] {
  if (!Array.isArray(value) || value.length < min || value.length > max) {
    fail(`invalid_${field}`, `${field} must be an array of ${min}-${max} items`);
  }
  return value;
}

/** Rejects fields the endpoint does not know, so a typo is an error rather than silently ignored. */
export function rejectUnknownFields(body: Record<string, unknown>, allowed: readonly string[], what: string): void {
  const unknown = Object.keys(body).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    fail('unknown_field', `${what} has unknown field(s): ${unknown.join(', ')}`);
  }
}

export function parseIdentifier(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    fail(`invalid_${field}`, `${field} must be a non-empty string`);
  }
  if (value.length > IDENTIFIER_MAX_LENGTH || !IDENTIFIER_PATTERN.test(value)) {
    fail(
      `invalid_${field}`,
      `${field} must be 1-${IDENTIFIER_MAX_LENGTH} characters of letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return value;
}

export function parseKey(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > KEY_MAX_LENGTH ||
    CONTROL_CHARACTERS.test(value) ||
    !value.isWellFormed()
  ) {
    fail(`invalid_${field}`, `${field} must be 1-${KEY_MAX_LENGTH} characters with no control characters or lone UTF-16 surrogates`);
  }
  return value;
}

export function parseRunId(value: unknown, field = 'run_id'): string {
  if (typeof value !== 'string' || !UUID_PATTERN.test(value)) {
    fail(`invalid_${field}`, `${field} must be a UUID`);
  }
  return value.toLowerCase();
}

export function parseInteger(value: unknown, field: string, min: number, max: number): number {
  const parsed = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < min || parsed > max) {
    fail(`invalid_${field}`, `${field} must be an integer from ${min} to ${max}`);
  }
  return parsed;
}

const TIMESTAMP_MIN = Date.UTC(1970, 0, 1);
const TIMESTAMP_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function parseTimestamp(value: unknown, field: string): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime()) || date.getTime() < TIMESTAMP_MIN || date.getTime() > TIMESTAMP_MAX) {
    fail(`invalid_${field}`, `${field} must be an ISO 8601 timestamp between the years 1970 and 9999`);
  }
  return date;
}

/**
 * Refuses a parsed JSON body nested deeper than JSON_MAX_DEPTH. Walks it with a stack of its own
 * rather than recursing, since recursing is what a deep body must not be able to break.
 */
export function assertJsonDepth(body: unknown): void {
  // Containers still to visit and their depths, side by side (no object per entry: bodies can hold many).
  const containers: object[] = [];
  const depths: number[] = [];
  if (body !== null && typeof body === 'object') {
    containers.push(body);
    depths.push(1);
  }
  while (containers.length > 0) {
    const container = containers.pop()!;
    const depth = depths.pop()!;
    if (depth > JSON_MAX_DEPTH) fail('json_too_deep', `the request body nests arrays and objects deeper than ${JSON_MAX_DEPTH} levels`);
    for (const item of Array.isArray(container) ? container : Object.values(container)) {
      if (item !== null && typeof item === 'object') {
        containers.push(item);
        depths.push(depth + 1);
      }
    }
  }
}

/**
 * Accepts any JSON value except text PostgreSQL jsonb rejects: NUL characters (SQLSTATE 22P05)
 * and lone UTF-16 surrogates (22P02). Stored, either would wedge a run on every redelivery.
 */
export function parseJson(value: unknown, field: string): JsonValue {
  if (value === undefined) return null;
  assertStorableJson(value, field);
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > JSON_MAX_BYTES) {
    fail(`${field}_too_large`, `${field} is ${bytes} bytes; the limit is ${JSON_MAX_BYTES}`);
  }
  return value as JsonValue;
}

function assertStorableJson(value: unknown, field: string): void {
  if (typeof value === 'string') {
    assertStorableText(value, field);
  } else if (Array.isArray(value)) {
    for (const item of value) assertStorableJson(item, field);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      assertStorableText(key, field);
      assertStorableJson(item, field);
    }
  }
}

function assertStorableText(text: string, field: string): void {
  if (text.includes('\u0000')) fail('json_nul_character', `${field} contains a NUL character (\\u0000)`);
  if (!text.isWellFormed()) fail('json_invalid_unicode', `${field} contains a lone UTF-16 surrogate`);
}
