import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { InvalidRequestError } from '../errors/engine.errors';
import { documentProblem } from './json-document';

/**
 * A workflow version's input schema: declared in code (`inputSchema`, a TypeBox schema or a plain JSON Schema
 * object), registered by its workers, and checked by the coordinators against every start's input. It reaches the
 * coordinator as JSON (TypeBox's own marks are symbols, which JSON leaves out), so the coordinator reads it back
 * into TypeBox types here and checks with TypeBox's compiled checker. Workers read it the same way when the
 * workflow is declared, so a schema the coordinator could not check is refused in code, not at registration.
 */

/** A TypeBox schema: declared as `inputSchema`, it gives the workflow's input type (InputOfSchema). */
export type TypedInputSchema = TSchema;
/** The input type a TypeBox input schema describes. */
export type InputOfSchema<S extends TypedInputSchema> = Static<S>;

/** The largest input schema, as JSON: a worker registers it every interval, for each version it hosts. */
export const INPUT_SCHEMA_MAX_BYTES = 16 * 1024;

/** Keywords that describe and never constrain (JSON Schema's annotations); `format` is one (as JSON Schema 2020-12 has it by default). */
const ANNOTATIONS = ['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', 'format'];
const KEYWORDS = new Set([
  ...ANNOTATIONS,
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'items',
  'additionalItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'contains',
  'minContains',
  'maxContains',
]);
/** Keywords that constrain one JSON type only: a schema that uses them names its `type`. */
const TYPED_KEYWORDS = new Set(
  [...KEYWORDS].filter((keyword) => !ANNOTATIONS.includes(keyword) && !['type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', 'not'].includes(keyword)),
);
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

class SchemaProblem extends Error {}

function problem(path: string, message: string): never {
  throw new SchemaProblem(`inputSchema${path} ${message}`);
}

/** What each constraining keyword's value must be (JSON Schema 2020-12: draft-04's boolean exclusiveMinimum is not one). */
const KEYWORD_VALUES: Record<string, { holds: (value: unknown) => boolean; what: string }> = Object.fromEntries([
  ...['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'].map((keyword) => [
    keyword,
    { holds: (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0, what: 'a non-negative integer' },
  ]),
  ...['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].map((keyword) => [
    keyword,
    { holds: (value: unknown) => typeof value === 'number' && Number.isFinite(value), what: 'a number' },
  ]),
  ['multipleOf', { holds: (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value > 0, what: 'a number above 0' }],
  ['uniqueItems', { holds: (value: unknown) => typeof value === 'boolean', what: 'true or false' }],
]);

/** A copy of `node` with only `keywords` (those defined), each value checked to be what its keyword takes. */
function only(node: Node, keywords: string[], path: string): Node {
  const defined = keywords.filter((keyword) => node[keyword] !== undefined);
  for (const keyword of defined) {
    const rule = KEYWORD_VALUES[keyword];
    if (rule && !rule.holds(node[keyword])) problem(`${path}/${keyword}`, `must be ${rule.what}`);
  }
  return Object.fromEntries(defined.map((keyword) => [keyword, node[keyword]]));
}

function pattern(source: unknown, path: string): RegExp {
  if (typeof source !== 'string') problem(path, 'must be a regular expression (a string)');
  try {
    return new RegExp(source);
  } catch (error) {
    return problem(path, `is not a regular expression: ${(error as Error).message}`);
  }
}

function list(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value) || value.length === 0) problem(path, 'must be a non-empty array');
  return value;
}

/** The TypeBox type of a JSON Schema node (a SchemaProblem for what TypeBox cannot check as JSON Schema means it). */
function typeOf(node: unknown, path: string): TSchema {
  if (node === true) return Type.Unknown();
  if (node === false) return Type.Never();
  if (!isNode(node)) problem(path, 'must be a JSON Schema: an object (or true, or false)');
  for (const keyword of Object.keys(node)) {
    if (!KEYWORDS.has(keyword)) problem(`${path}/${keyword}`, 'is not a keyword the input check supports ($ref and conditionals are not)');
  }
  // Each part constrains the value: all must hold (allOf).
  const parts: TSchema[] = [];
  if (node.type !== undefined) parts.push(typed(node, path));
  else {
    const typedKeyword = Object.keys(node).find((keyword) => TYPED_KEYWORDS.has(keyword));
    if (typedKeyword) problem(path, `uses ${typedKeyword}: name the JSON type it constrains (\`type\`)`);
  }
  if (node.enum !== undefined) parts.push(Type.Union(list(node.enum, `${path}/enum`).map((value, index) => literal(value, `${path}/enum/${index}`))));
  if (node.const !== undefined) parts.push(literal(node.const, `${path}/const`));
  // oneOf is checked as anyOf: TypeBox has no "exactly one" (alternatives that exclude each other, the usual case, agree).
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    if (node[keyword] !== undefined)
      parts.push(Type.Union(list(node[keyword], `${path}/${keyword}`).map((each, index) => typeOf(each, `${path}/${keyword}/${index}`))));
  }
  if (node.allOf !== undefined) parts.push(...list(node.allOf, `${path}/allOf`).map((each, index) => typeOf(each, `${path}/allOf/${index}`)));
  if (node.not !== undefined) parts.push(Type.Not(typeOf(node.not, `${path}/not`)));
  return parts.length === 0 ? Type.Unknown() : parts.length === 1 ? parts[0] : Type.Intersect(parts);
}

function literal(value: unknown, path: string): TSchema {
  if (value === null) return Type.Null();
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return Type.Literal(value);
  return problem(path, 'must be a string, a number, a boolean or null');
}

/** A node with `type`: one JSON type, or a list of them (any of which). */
function typed(node: Node, path: string): TSchema {
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if (types.length === 0) problem(`${path}/type`, 'must name a JSON type');
  const each = types.map((type, index) => {
    if (typeof type !== 'string' || !JSON_TYPES.has(type)) problem(`${path}/type`, `must be one of ${[...JSON_TYPES].join(', ')} (or a list of them)`);
    if (types.indexOf(type) !== index) problem(`${path}/type`, `names ${type} twice`);
    return ofType(type, node, path);
  });
  return each.length === 1 ? each[0] : Type.Union(each);
}

function ofType(type: string, node: Node, path: string): TSchema {
  switch (type) {
    case 'string':
      if (node.pattern !== undefined) pattern(node.pattern, `${path}/pattern`);
      return Type.String(only(node, ['minLength', 'maxLength', 'pattern'], path));
    case 'number':
    case 'integer': {
      const options = only(node, ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'], path);
      return type === 'number' ? Type.Number(options) : Type.Integer(options);
    }
    case 'boolean':
      return Type.Boolean();
    case 'null':
      return Type.Null();
    case 'object':
      return object(node, path);
    default:
      return array(node, path);
  }
}

function object(node: Node, path: string): TSchema {
  const options: Node = only(node, ['minProperties', 'maxProperties'], path);
  const additional = node.additionalProperties;
  if (additional !== undefined)
    options.additionalProperties = typeof additional === 'boolean' ? additional : typeOf(additional, `${path}/additionalProperties`);
  if (node.patternProperties !== undefined) {
    const patterns = isNode(node.patternProperties) ? Object.entries(node.patternProperties) : [];
    if (patterns.length !== 1 || node.properties !== undefined || node.required !== undefined) {
      problem(`${path}/patternProperties`, 'is supported alone (one pattern, without properties or required), as a record');
    }
    const [[source, value]] = patterns;
    const key = Type.RegExp(pattern(source, `${path}/patternProperties`));
    return Type.Record(key, typeOf(value, `${path}/patternProperties/${source}`), options);
  }
  const properties = node.properties ?? {};
  if (!isNode(properties)) problem(`${path}/properties`, 'must be an object of schemas');
  const required = node.required ?? [];
  if (!Array.isArray(required) || !required.every((name) => typeof name === 'string')) problem(`${path}/required`, 'must be a list of property names');
  // The compiled check finds a property with `in`, which sees what every object inherits (`constructor`,
  // `toString`, `__proto__`): such a name could never be told missing, so it is refused rather than checked wrongly.
  for (const name of [...Object.keys(properties), ...required]) {
    if (name in Object.prototype) problem(`${path}/properties`, `names ${name}, which every JavaScript object has: the input check cannot tell it missing`);
  }
  const fields: Record<string, TSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const field = typeOf(schema, `${path}/properties/${name}`);
    fields[name] = required.includes(name) ? field : Type.Optional(field);
  }
  // A required name without a schema of its own must only be there (TypeBox checks the properties it lists).
  for (const name of required) fields[name] ??= Type.Unknown();
  return Type.Object(fields, options);
}

function array(node: Node, path: string): TSchema {
  const { items } = node;
  if (Array.isArray(items)) {
    // TypeBox checks tuples of a fixed length, as Type.Tuple writes them.
    if (node.additionalItems !== false || node.minItems !== items.length || node.maxItems !== items.length) {
      problem(`${path}/items`, 'as a list (a tuple) needs additionalItems false and minItems and maxItems its length');
    }
    return Type.Tuple(items.map((item, index) => typeOf(item, `${path}/items/${index}`)));
  }
  if (node.additionalItems !== undefined) problem(`${path}/additionalItems`, 'applies to a tuple (items as a list)');
  const options = only(node, ['minItems', 'maxItems', 'uniqueItems', 'minContains', 'maxContains'], path);
  if (node.contains !== undefined) options.contains = typeOf(node.contains, `${path}/contains`);
  return Type.Array(items === undefined ? Type.Unknown() : typeOf(items, `${path}/items`), options);
}

/**
 * Refuses an input schema that is not a JSON Schema object the input check can use, or too large (an
 * InvalidRequestError: `invalid_input_schema`, `input_schema_too_large`); `where` names it in the message
 * (`workflow order-processing 1.0.0: `). Returns the TypeBox type it is checked by.
 */
export function readInputSchema(schema: unknown, where = ''): TSchema {
  if (!isNode(schema)) throw new InvalidRequestError('invalid_input_schema', `${where}inputSchema must be a JSON Schema object (TypeBox's Type.Object, say)`);
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch (error) {
    throw new InvalidRequestError('invalid_input_schema', `${where}inputSchema is not JSON: ${(error as Error).message}`);
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > INPUT_SCHEMA_MAX_BYTES) {
    throw new InvalidRequestError('input_schema_too_large', `${where}inputSchema is ${bytes} bytes of JSON; the limit is ${INPUT_SCHEMA_MAX_BYTES}`);
  }
  const stored = documentProblem(schema, 'input_schema', `${where}inputSchema`);
  // What no jsonb column could store (a NUL, a lone surrogate), or nested deeper than a registration may carry it.
  if (stored) throw new InvalidRequestError(stored.reason, stored.message);
  try {
    // Read from its JSON, as the coordinator gets it (a TypeBox schema's own marks do not travel).
    return typeOf(JSON.parse(text), '');
  } catch (error) {
    if (error instanceof SchemaProblem) throw new InvalidRequestError('invalid_input_schema', `${where}${error.message}`);
    throw error;
  }
}

/** A compiled check of inputs against one input schema. */
export interface InputCheck {
  /** The first mismatch of `input` as `input/<JSON pointer>: <what was expected>`, or undefined when it matches. */
  firstMismatch(input: unknown): string | undefined;
}

/** What an enum (a union of literals) allows, said as such: TypeBox's own message says only "Expected union value". */
function expected(schema: TSchema): string | undefined {
  const literals = (schema.anyOf as TSchema[] | undefined)?.map(literalOf);
  if (!literals?.every((literal) => literal !== undefined)) return undefined;
  return `Expected one of ${literals.map((literal) => JSON.stringify(literal.value)).join(', ')}`;
}

/** The one value an alternative allows: a `const`, alone or beside its `type` (read as both, an allOf). */
function literalOf(schema: TSchema): { value: unknown } | undefined {
  if ('const' in schema) return { value: schema.const };
  const withConst = (schema.allOf as TSchema[] | undefined)?.find((part) => 'const' in part);
  return withConst && { value: withConst.const };
}

/** Compiles the check of an input schema (read by readInputSchema: it throws what that throws). */
export function compileInputCheck(schema: unknown): InputCheck {
  const type = readInputSchema(schema);
  let check: ReturnType<typeof TypeCompiler.Compile>;
  try {
    check = TypeCompiler.Compile(type);
  } catch (error) {
    // What the reading above let through and TypeBox still refuses: the schema's problem, not the caller's input's.
    throw new InvalidRequestError('invalid_input_schema', `inputSchema cannot be compiled into a check: ${(error as Error).message}`);
  }
  return {
    firstMismatch(input) {
      if (check.Check(input)) return undefined;
      // An allOf's own error follows its part's, which says more; a union's says only that no alternative matched.
      for (const error of check.Errors(input)) {
        if (error.type !== ValueErrorType.Intersect) return `input${error.path}: ${expected(error.schema) ?? error.message}`;
      }
      return 'input: does not match the input schema';
    },
  };
}
