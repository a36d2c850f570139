import {
  CloneType,
  Kind,
  type ObjectOptions,
  type StaticDecode,
  type TLiteral,
  type TNull,
  type TObject,
  type TProperties,
  type TSchema,
  type TTransform,
  type TUnion,
  Type,
  TypeRegistry,
  type TUnsafe,
} from '@sinclair/typebox';
import type { JsonValue } from './json-document';

/**
 * The building blocks of the contract's schemas. Each field schema carries the stable reason a value it
 * refuses gets (`x-reason`, shown in the API description too) and a description that is also the refusal's
 * message ("<field> must be <description>").
 */
export const REASON = 'x-reason';

/** Where a map's schema (a TypeBox Record) keeps the schema of its keys, so a refusal can name the rule a key broke. */
export const RECORD_KEY = 'x-key';

/** Refusal reasons of a field, by convention `invalid_<field>`. */
const invalid = (field: string) => ({ [REASON]: `invalid_${field}` });

/**
 * One rule for every identifier that reaches the database columns and Redis keys: workflow names,
 * versions, shards and event names. Keys are built by joining identifiers with ':' so the character
 * set excludes it.
 */
export const IDENTIFIER_MAX_LENGTH = 128;

/**
 * Idempotency keys, worker ids, step keys and names are chosen by users: any printable text, bounded.
 * Not lone UTF-16 surrogates: UTF-8 cannot carry one, so it would be stored as U+FFFD and two keys
 * would become one.
 */
export const KEY_MAX_LENGTH = 255;

/** Each field's schema is made once (they are compiled on first use, and parse functions ask for them often). */
function once<A extends unknown[], T>(make: (...args: A) => T): (...args: A) => T {
  const made = new Map<string, T>();
  return (...args: A) => {
    const key = JSON.stringify(args);
    let schema = made.get(key);
    if (schema === undefined) {
      schema = make(...args);
      made.set(key, schema);
    }
    return schema;
  };
}

export const Identifier = once((field: string) =>
  Type.String({
    minLength: 1,
    maxLength: IDENTIFIER_MAX_LENGTH,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
    description: `1-${IDENTIFIER_MAX_LENGTH} characters of letters, digits, '.', '_' or '-', starting with a letter or digit`,
    ...invalid(field),
  }),
);

/**
 * A worker's build id: what one build of its code is called (a package version, a commit, an image tag), recorded
 * on the runs it executes. An identifier that also allows '+' (semver's build metadata: `1.4.0+sha.5e3c1f2`).
 */
export const BUILD_ID_MAX_LENGTH = 128;

export const BuildId = once((field: string) =>
  Type.String({
    minLength: 1,
    maxLength: BUILD_ID_MAX_LENGTH,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._+-]*$',
    description: `1-${BUILD_ID_MAX_LENGTH} characters of letters, digits, '.', '_', '+' or '-', starting with a letter or digit`,
    ...invalid(field),
  }),
);

export const Key = once((field: string) =>
  Type.String({
    minLength: 1,
    maxLength: KEY_MAX_LENGTH,
    // No control characters; a surrogate only as half of a pair. (The same with or without the `u` flag.)
    pattern: '^(?:[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$',
    description: `1-${KEY_MAX_LENGTH} characters with no control characters or lone UTF-16 surrogates`,
    ...invalid(field),
  }),
);

/** A run id: a UUID in any case, read in lower case (the case PostgreSQL writes it in). */
export const RunId = once((field: string) =>
  Type.Transform(
    Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description: 'a UUID', ...invalid(field) }),
  )
    .Decode((id) => id.toLowerCase())
    .Encode((id) => id),
);

export const DeadLetterId = once((field: string) =>
  Type.String({ pattern: '^[1-9][0-9]{0,17}$', description: 'a positive integer (as text)', ...invalid(field) }),
);

export const IntegerIn = once((field: string, minimum: number, maximum: number) =>
  Type.Integer({ minimum, maximum, description: `an integer from ${minimum} to ${maximum}`, ...invalid(field) }),
);

/** One of the given strings. */
export function OneOf<const V extends readonly string[]>(field: string, values: V): TUnion<TLiteral<V[number]>[]> {
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    { description: `one of ${values.join(', ')}`, ...invalid(field) },
  ) as never;
}

export function Nullable<T extends TSchema>(schema: T): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()], { description: `${schema.description ?? 'a value'}, or null`, [REASON]: schema[REASON] });
}

export const Flag = once((field: string) => Type.Boolean({ description: 'a boolean', ...invalid(field) }));

/** An array of `minItems`-`maxItems` of `items`, refused as `invalid_<field>`. */
export function ListOf<T extends TSchema>(field: string, items: T, minItems: number, maxItems: number, what: string, options: { uniqueItems?: boolean } = {}) {
  const unique = options.uniqueItems ? ' distinct' : '';
  return Type.Array(items, { minItems, maxItems, ...options, description: `an array of ${minItems}-${maxItems}${unique} ${what}`, ...invalid(field) });
}

/** An object with these fields and no others (a typo is an error rather than silently ignored). */
export function Closed<T extends TProperties>(properties: T, options: ObjectOptions = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

const TIMESTAMP_KIND = 'NestDurable/Timestamp';
const TIMESTAMP_MIN = Date.UTC(1970, 0, 1);
const TIMESTAMP_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * Whether `text` is an RFC 3339 timestamp (ISO 8601 with its offset: `Z` or `±hh:mm`) of a day the calendar
 * has, between the years 1970 and 9999. `new Date()` alone takes far more: a time without an offset (read
 * in the server's zone), February 30th (rolled over to March), free text such as `June 1 2025`.
 */
export function isTimestamp(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  const parts = RFC_3339.exec(text);
  if (!parts) return false;
  const [year, month, day, hour, minute, second, offsetHours = 0, offsetMinutes = 0] = parts.slice(1).map((part) => Number(part ?? 0));
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) {
    return false;
  }
  const time = new Date(text).getTime();
  return time >= TIMESTAMP_MIN && time <= TIMESTAMP_MAX;
}

TypeRegistry.Set(TIMESTAMP_KIND, (_schema, value) => isTimestamp(value));

/** An RFC 3339 timestamp between the years 1970 and 9999, read as a Date. */
export const Timestamp = once((field: string) =>
  Type.Transform(
    Type.Unsafe<string>({
      [Kind]: TIMESTAMP_KIND,
      type: 'string',
      format: 'date-time',
      description: 'an RFC 3339 timestamp (ISO 8601 with its offset, `Z` or `±hh:mm`) between the years 1970 and 9999',
      ...invalid(field),
    }),
  )
    .Decode((text) => new Date(text))
    .Encode((date) => date.toISOString()),
);

/** Any JSON value, in a response (what the coordinator stored, as it stored it). */
export function AnyJson(description = 'any JSON value'): TUnsafe<JsonValue> {
  return Type.Unsafe<JsonValue>(Type.Unknown({ description }));
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** What `schema` decodes to once `defaults` filled the fields it left out. */
export type WithDefaults<T extends TObject, D> = Simplify<
  Omit<StaticDecode<T>, keyof D> & { [K in keyof D & keyof StaticDecode<T>]-?: Exclude<StaticDecode<T>[K], undefined> }
>;

/**
 * `schema` whose optional fields in `defaults` read as their default when left out: the API description
 * shows them as the fields' `default`, and the decoded type has them.
 */
export function withDefaults<T extends TObject, const D extends { [K in keyof StaticDecode<T>]?: StaticDecode<T>[K] }>(
  schema: T,
  defaults: D,
): TTransform<T, WithDefaults<T, D>> {
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([key, property]) => [
      key,
      key in defaults ? CloneType(property, { default: (defaults as Record<string, unknown>)[key] }) : property,
    ]),
  );
  const documented = CloneType(schema, {}) as T;
  documented.properties = properties as T['properties'];
  return Type.Transform(documented)
    .Decode((value) => {
      // Filled in one by one: `{ ...defaults, ...value }` is many times slower in V8 (the second spread
      // redefines properties the first one made; ~3 µs a report, docs/benchmarks.md), and this runs for
      // every report a worker sends.
      const decoded = { ...(value as Record<string, unknown>) };
      for (const key in defaults) if (decoded[key] === undefined) decoded[key] = defaults[key];
      return decoded as WithDefaults<T, D>;
    })
    .Encode((value) => value as StaticDecode<T>) as never;
}
