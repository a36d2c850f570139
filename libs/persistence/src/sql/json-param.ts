/**
 * A jsonb parameter's value: node-postgres sends a JS array as a PostgreSQL array and a string as text, so jsonb
 * parameters are always passed pre-serialised (null and undefined as SQL NULL).
 */
export function jsonParam(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
