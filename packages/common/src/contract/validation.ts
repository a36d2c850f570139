import {
  Kind,
  type StaticDecode,
  type TArray,
  type TObject,
  type TRecord,
  type TransformOptions,
  TransformKind,
  type TSchema,
  type TUnion,
} from '@sinclair/typebox';
import { compiled } from './compiled-check';
import { InvalidRequestError } from '../errors/engine.errors';
import { BuildId, Identifier, REASON, RECORD_KEY, RunId } from './fields';
import { DOCUMENT_FIELD, DOCUMENT_SHAPE, documentProblem, JSON_DOCUMENT_KIND, type TJsonDocument } from './json-document';

/**
 * Validation by the contract's schemas: a compiled check (TypeBox's TypeCompiler), and only for a value
 * it refuses, a walk that finds the first problem in the order a reader expects (unknown fields, then
 * each field in the order the schema declares them) and its stable reason. A value it accepts is then
 * decoded: defaults filled in, run ids in lower case, timestamps as Dates, and the rules no JSON Schema
 * keyword says (they throw their own InvalidRequestError).
 */

export function fail(reason: string, message: string): never {
  throw new InvalidRequestError(reason, message);
}

/**
 * The value `schema` describes, decoded, or an InvalidRequestError with the reason of its first problem.
 * `what` names the value in messages (`request body`, `query`).
 */
export function decode<T extends TSchema>(schema: T, value: unknown, what: string): StaticDecode<T> {
  if (!compiled(schema).Check(value)) throw refusal(schema, value, what);
  return decodeChecked(schema, value) as StaticDecode<T>;
}

/**
 * A query as the HTTP server parses it (every value text, or a list of texts when repeated), decoded: integer fields
 * are read from decimal text first.
 */
export function decodeQuery<T extends TSchema>(schema: T, query: Record<string, unknown>): StaticDecode<T> {
  const properties = (schema as unknown as TObject).properties;
  const isInteger = (key: string, value: unknown) =>
    Object.hasOwn(properties, key) && properties[key].type === 'integer' && typeof value === 'string' && /^-?\d+$/.test(value);
  // fromEntries defines each key as its own property: `__proto__=…` stays a field (an unknown one), not a prototype.
  const read = Object.fromEntries(Object.entries(query).map(([key, value]) => [key, isInteger(key, value) ? Number(value) : value]));
  return decode(schema, read, 'query');
}

/** Checks one value against a field's rule: `parseRunId(id)` is the run id, lower case, or a 400 `invalid_run_id`. */
export function parseRunId(value: unknown, field = 'run_id'): string {
  return decode(RunId(field), value, field);
}

export function parseIdentifier(value: unknown, field: string): string {
  return decode(Identifier(field), value, field);
}

/** A worker's build id (see BuildId), or a 400 `invalid_<field>`. */
export function parseBuildId(value: unknown, field = 'buildId'): string {
  return decode(BuildId(field), value, field);
}

// ---- Refusals --------------------------------------------------------------------------------

type Problem = { kind: 'schema'; schema: TSchema; path: string; value: unknown } | { kind: 'unknown_fields'; path: string; fields: string[] };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const passes = (schema: TSchema, value: unknown) => compiled(schema).Check(value);

function refusal(schema: TSchema, value: unknown, what: string): InvalidRequestError {
  const problem = firstProblem(schema, value, '') ?? { kind: 'schema', schema, path: '', value };
  const where = problem.path === '' ? what : problem.path;
  if (problem.kind === 'unknown_fields') {
    return new InvalidRequestError('unknown_field', `${where} has unknown field(s): ${problem.fields.join(', ')}`);
  }
  const refused = problem.schema;
  if (refused[Kind] === JSON_DOCUMENT_KIND && problem.value !== undefined) {
    const found = documentProblem(problem.value, (refused as TJsonDocument)[DOCUMENT_FIELD], where);
    if (found) return new InvalidRequestError(found.reason, found.message);
  }
  const reason = (refused[REASON] as string | undefined) ?? 'invalid_body';
  const rule = refused.description ?? (refused[Kind] === 'Object' ? 'a JSON object' : 'as described in the API description');
  return new InvalidRequestError(reason, `${where} must be ${rule}`);
}

/**
 * The first problem of a value `schema` refuses: in an object, unknown fields first, then its fields in
 * the order the schema declares them (a missing one is refused as that field); in an array, its length,
 * then its items in order; in a union with a discriminator, fields none of its variants knows, then the
 * discriminator, then the variant it names.
 */
function firstProblem(schema: TSchema, value: unknown, path: string): Problem | undefined {
  if (passes(schema, value)) return undefined;
  const here: Problem = { kind: 'schema', schema, path, value };
  switch (schema[Kind]) {
    case 'Object': {
      const object = schema as TObject;
      if (!isObject(value)) return here;
      if (object.additionalProperties === false) {
        const unknown = Object.keys(value).filter((key) => !Object.hasOwn(object.properties, key));
        if (unknown.length > 0) return { kind: 'unknown_fields', path, fields: unknown };
      }
      const required = object.required ?? [];
      for (const [key, property] of Object.entries(object.properties)) {
        const field = path === '' ? key : `${path}.${key}`;
        if (value[key] === undefined) {
          if (required.includes(key)) return { kind: 'schema', schema: property, path: field, value: undefined };
          continue;
        }
        const problem = firstProblem(property, value[key], field);
        if (problem) return problem;
      }
      return here;
    }
    case 'Array': {
      const array = schema as TArray;
      if (!Array.isArray(value) || value.length < (array.minItems ?? 0) || value.length > (array.maxItems ?? Infinity)) return here;
      for (const [index, item] of value.entries()) {
        const problem = firstProblem(array.items, item, `${path}[${index}]`);
        if (problem) return problem;
      }
      return here;
    }
    case 'Union': {
      const tag = discriminator(schema);
      if (!tag) return here;
      if (!isObject(value)) return { kind: 'schema', schema: { [Kind]: 'Object' } as unknown as TSchema, path, value };
      const variants = (schema as TUnion).anyOf as TObject[];
      const unknown = Object.keys(value).filter((key) => !variants.some((variant) => Object.hasOwn(variant.properties, key)));
      if (unknown.length > 0) return { kind: 'unknown_fields', path, fields: unknown };
      const variant = variantOf(schema as TUnion, tag, value);
      if (!variant) return { kind: 'schema', schema: tagSchema(schema as TUnion, tag), path: path === '' ? tag : `${path}.${tag}`, value: value[tag] };
      return firstProblem(variant, value, path);
    }
    case 'Record': {
      // A map (run tags): its size, then each key against the rule of its keys, then each value.
      if (!isObject(value) || Object.keys(value).length > ((schema as TRecord).maxProperties ?? Infinity)) return here;
      const [keyPattern, item] = Object.entries((schema as TRecord).patternProperties)[0];
      for (const [key, entry] of Object.entries(value)) {
        const field = path === '' ? key : `${path}.${key}`;
        if (!new RegExp(keyPattern).test(key))
          return { kind: 'schema', schema: (schema[RECORD_KEY] as TSchema | undefined) ?? schema, path: field, value: key };
        const problem = firstProblem(item, entry, field);
        if (problem) return problem;
      }
      return here;
    }
    case JSON_DOCUMENT_KIND: {
      const shape = (schema as TJsonDocument)[DOCUMENT_SHAPE];
      return (shape && value !== undefined && firstProblem(shape, value, path)) || here;
    }
    default:
      return here;
  }
}

/** The property a union's variants are told apart by (OpenAPI's `discriminator`), if it has one. */
function discriminator(schema: TSchema): string | undefined {
  return (schema as { discriminator?: { propertyName: string } }).discriminator?.propertyName;
}

function variantOf(union: TUnion, tag: string, value: Record<string, unknown>): TSchema | undefined {
  return union.anyOf.find((variant) => (variant as TObject).properties[tag]?.const === value[tag]);
}

/** What the discriminator of a union may be: one of its variants' values, refused with the reason they give. */
function tagSchema(union: TUnion, tag: string): TSchema {
  const values = union.anyOf.map((variant) => (variant as TObject).properties[tag].const as string);
  return { [Kind]: 'Union', [REASON]: (union.anyOf[0] as TObject).properties[tag][REASON], description: `one of ${values.join(', ')}` } as unknown as TSchema;
}

// ---- Decoding --------------------------------------------------------------------------------

const transforming = new WeakMap<TSchema, boolean>();

/** Whether decoding `schema` changes anything (only those parts are walked). */
function hasTransform(schema: TSchema): boolean {
  let known = transforming.get(schema);
  if (known === undefined) {
    const inner: TSchema[] =
      schema[Kind] === 'Object'
        ? Object.values((schema as TObject).properties)
        : schema[Kind] === 'Array'
          ? [(schema as TArray).items]
          : schema[Kind] === 'Union'
            ? (schema as TUnion).anyOf
            : [];
    known = TransformKind in schema || inner.some(hasTransform);
    transforming.set(schema, known);
  }
  return known;
}

/**
 * Decodes a value `schema` accepted. (TypeBox's own Decode checks every variant of a union again,
 * documents included; a discriminator says which variant a value is.)
 */
function decodeChecked(schema: TSchema, value: unknown): unknown {
  if (!hasTransform(schema)) return value;
  let decoded = value;
  if (schema[Kind] === 'Object' && isObject(value)) {
    const properties = (schema as TObject).properties;
    const object: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) object[key] = Object.hasOwn(properties, key) ? decodeChecked(properties[key], item) : item;
    decoded = object;
  } else if (schema[Kind] === 'Array' && Array.isArray(value)) {
    decoded = value.map((item) => decodeChecked((schema as TArray).items, item));
  } else if (schema[Kind] === 'Union') {
    const tag = discriminator(schema);
    const variant = tag
      ? variantOf(schema as TUnion, tag, value as Record<string, unknown>)
      : (schema as TUnion).anyOf.find((candidate) => passes(candidate, value));
    decoded = decodeChecked(variant!, value);
  }
  const transform = (schema as { [TransformKind]?: TransformOptions })[TransformKind];
  return transform ? transform.Decode(decoded) : decoded;
}
