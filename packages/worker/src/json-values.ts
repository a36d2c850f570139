import type { JsonValue } from '@nest-durable/common';

/**
 * `value` with each object's keys in the order PostgreSQL's jsonb keeps them (shorter first, then by
 * their UTF-8 bytes), the order in which a replay reads a recorded result back.
 */
export function inJsonbOrder(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => {
    const [x, y] = [Buffer.from(a), Buffer.from(b)];
    return x.length - y.length || Buffer.compare(x, y);
  });
  return Object.fromEntries(keys.map((key) => [key, inJsonbOrder(value[key])]));
}

/** Normalises a handler's value to JSON (undefined becomes null, Dates become strings). */
export function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
