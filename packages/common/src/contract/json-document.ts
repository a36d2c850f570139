import { Kind, type TSchema, type TUnsafe, Type, TypeRegistry } from '@sinclair/typebox';
import { compiled } from './compiled-check';
import { InvalidRequestError } from '../errors/engine.errors';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** JSON documents (run input, task output, run output, event data, errors) are bounded in size. */
export const JSON_MAX_BYTES = 1024 * 1024;

/**
 * Deepest nesting of arrays and objects in a request body, the body itself being level 1. Validation,
 * JSON.stringify and the driver all recurse into documents: bounded here, none of them can run out of
 * stack (they did at ~3,500 levels).
 */
export const JSON_MAX_DEPTH = 128;

/**
 * Deepest nesting of a JSON document (an input, output, event's data, task result), itself being level 1:
 * what the deepest envelope (a worker report: body, `reports`, a report, `complete`) leaves of
 * JSON_MAX_DEPTH. Bounded per document, not only per body, so that whatever one request accepts another can
 * carry: an input a start accepted can come back as its run's output.
 */
export const JSON_DOCUMENT_MAX_DEPTH = JSON_MAX_DEPTH - 4;

/**
 * Whether `value` nests arrays and objects deeper than `maxDepth`, itself being level 1. Walks it with a
 * stack of its own rather than recursing, since recursing is what a deep value must not be able to break.
 */
function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  // Containers still to visit and their depths, side by side (no object per entry: bodies can hold many).
  const containers: object[] = [];
  const depths: number[] = [];
  if (value !== null && typeof value === 'object') {
    containers.push(value);
    depths.push(1);
  }
  while (containers.length > 0) {
    const container = containers.pop()!;
    const depth = depths.pop()!;
    if (depth > maxDepth) return true;
    for (const item of Array.isArray(container) ? container : Object.values(container)) {
      if (item !== null && typeof item === 'object') {
        containers.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Refuses a parsed JSON body nested deeper than JSON_MAX_DEPTH. Every body passes it before any schema looks at it. */
export function assertJsonDepth(body: unknown): void {
  if (nestsDeeperThan(body, JSON_MAX_DEPTH)) {
    throw new InvalidRequestError('json_too_deep', `the request body nests arrays and objects deeper than ${JSON_MAX_DEPTH} levels`);
  }
}

export const JSON_DOCUMENT_KIND = 'NestDurable/JsonDocument';

/** The field a document schema is for, which names the reason of a document too large (`<field>_too_large`). */
export const DOCUMENT_FIELD = Symbol('NestDurable/DocumentField');
/** The shape a document schema requires, if any (its JSON Schema keywords are the document schema's own too). */
export const DOCUMENT_SHAPE = Symbol('NestDurable/DocumentShape');

/** A JSON document field: any JSON (or JSON of a shape) that PostgreSQL can store, at most JSON_MAX_BYTES. */
export interface TJsonDocument<T = JsonValue> extends TUnsafe<T> {
  [DOCUMENT_FIELD]: string;
  [DOCUMENT_SHAPE]?: TSchema;
}

/** Why PostgreSQL could not store a document, if it could not. */
export interface DocumentProblem {
  reason: string;
  message: string;
}

// `\u0000` or `\udXXX` (a lone surrogate: JSON.stringify writes well-formed pairs as they are) escaped in
// JSON text, after an even run of backslashes (an odd one escapes the backslash instead).
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;
const ESCAPED_LONE_SURROGATE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/**
 * Accepts any JSON value of at most JSON_MAX_BYTES nested at most JSON_DOCUMENT_MAX_DEPTH levels, except
 * text PostgreSQL jsonb rejects, in strings or keys: NUL characters (SQLSTATE 22P05) and lone UTF-16
 * surrogates (22P02). Stored, either would wedge a run on every redelivery. The document is serialised
 * once, which its size needs anyway, and its escapes are read from that text rather than by walking every
 * string and key.
 */
export function documentProblem(value: unknown, field: string, where = field): DocumentProblem | undefined {
  const text = JSON.stringify(value);
  if (ESCAPED_NUL.test(text)) return { reason: 'json_nul_character', message: `${where} contains a NUL character (\\u0000)` };
  if (ESCAPED_LONE_SURROGATE.test(text)) return { reason: 'json_invalid_unicode', message: `${where} contains a lone UTF-16 surrogate` };
  const bytes = Buffer.byteLength(text);
  if (bytes > JSON_MAX_BYTES) return { reason: `${field}_too_large`, message: `${where} is ${bytes} bytes; the limit is ${JSON_MAX_BYTES}` };
  if (nestsDeeperThan(value, JSON_DOCUMENT_MAX_DEPTH)) {
    return { reason: 'json_too_deep', message: `${where} nests arrays and objects deeper than ${JSON_DOCUMENT_MAX_DEPTH} levels` };
  }
  return undefined;
}

TypeRegistry.Set<TJsonDocument>(JSON_DOCUMENT_KIND, (schema, value) => {
  if (value === undefined) return false;
  const shape = schema[DOCUMENT_SHAPE];
  if (shape && !compiled(shape).Check(value)) return false;
  return documentProblem(value, schema[DOCUMENT_FIELD]) === undefined;
});

/**
 * A JSON document field called `field`. With `shape`, the document must also have that shape, which the
 * API description shows in its place.
 */
export function JsonDocument(field: string): TJsonDocument;
export function JsonDocument<S extends TSchema>(field: string, shape: S, description: string): TJsonDocument<S['static']>;
export function JsonDocument(field: string, shape?: TSchema, description?: string): TJsonDocument {
  const storable = `at most ${JSON_MAX_BYTES} bytes of JSON nested at most ${JSON_DOCUMENT_MAX_DEPTH} levels, without NUL characters or lone UTF-16 surrogates`;
  return Type.Unsafe<JsonValue>({
    ...shape,
    [Kind]: JSON_DOCUMENT_KIND,
    [DOCUMENT_FIELD]: field,
    [DOCUMENT_SHAPE]: shape,
    'x-reason': `invalid_${field}`,
    description: description ? `${description} (${storable})` : `any JSON value (${storable})`,
  }) as TJsonDocument;
}
