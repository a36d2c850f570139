import { describe, expect, it } from '@jest/globals';
import { Type } from '@sinclair/typebox';
import { InvalidRequestError } from '../errors/engine.errors';
import { compileInputCheck, INPUT_SCHEMA_MAX_BYTES, readInputSchema } from './input-schema';
import { WorkerRegistration } from './worker-registry.contracts';
import { decode } from './validation';

const refusal = (schema: unknown) => {
  try {
    readInputSchema(schema, 'workflow w 1: ');
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return { reason: (error as InvalidRequestError).reason, message: (error as Error).message };
  }
  throw new Error('accepted');
};

describe('input schemas', () => {
  const Order = Type.Object({
    email: Type.String({ format: 'email' }),
    quantity: Type.Integer({ minimum: 1 }),
    lines: Type.Array(Type.Object({ sku: Type.String({ pattern: '^[A-Z]+$' }) }), { minItems: 1 }),
    note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    kind: Type.Union([Type.Literal('retail'), Type.Literal('wholesale')]),
  });

  it('checks inputs against a TypeBox schema, naming the JSON path of the first mismatch', () => {
    const check = compileInputCheck(Order);
    const good = { email: 'a@b.c', quantity: 2, lines: [{ sku: 'AB' }], kind: 'retail' };
    expect(check.firstMismatch(good)).toBeUndefined();
    expect(check.firstMismatch({ ...good, email: 5 })).toBe('input/email: Expected string');
    expect(check.firstMismatch({ ...good, quantity: 0 })).toBe('input/quantity: Expected integer to be greater or equal to 1');
    expect(check.firstMismatch({ ...good, lines: [{ sku: 'ab' }] })).toBe("input/lines/0/sku: Expected string to match '^[A-Z]+$'");
    expect(check.firstMismatch({ ...good, kind: 'other' })).toBe('input/kind: Expected one of "retail", "wholesale"');
    expect(check.firstMismatch({ quantity: 1, lines: [{ sku: 'A' }], kind: 'retail' })).toBe('input/email: Expected required property');
    expect(check.firstMismatch(null)).toBe('input: Expected object');
  });

  it('reads a plain JSON Schema as JSON Schema means it', () => {
    const check = compileInputCheck({
      type: 'object',
      required: ['id', 'tags'],
      additionalProperties: false,
      properties: {
        id: { type: ['string', 'integer'] },
        tags: { type: 'object', patternProperties: { '^t_': { type: 'boolean' } }, additionalProperties: false },
        level: { enum: ['low', 'high', null] },
        point: { type: 'array', items: [{ type: 'number' }, { type: 'number' }], additionalItems: false, minItems: 2, maxItems: 2 },
        either: { oneOf: [{ type: 'string' }, { type: 'number', not: { const: 0 } }] },
        both: {
          allOf: [
            { type: 'object', required: ['a'] },
            { type: 'object', required: ['b'] },
          ],
        },
      },
    });
    expect(check.firstMismatch({ id: 'x', tags: { t_a: true } })).toBeUndefined();
    expect(check.firstMismatch({ id: 7, tags: {}, level: null, point: [1, 2], either: 3, both: { a: 1, b: 2 } })).toBeUndefined();
    expect(check.firstMismatch({ id: 1.5, tags: {} })).toBe('input/id: Expected union value');
    expect(check.firstMismatch({ id: 'x', tags: {}, extra: 1 })).toBe('input/extra: Unexpected property');
    expect(check.firstMismatch({ id: 'x' })).toBe('input/tags: Expected required property');
    expect(check.firstMismatch({ id: 'x', tags: { other: true } })).toMatch(/^input\/tags/);
    expect(check.firstMismatch({ id: 'x', tags: {}, point: [1] })).toMatch(/^input\/point/);
    expect(check.firstMismatch({ id: 'x', tags: {}, either: 0 })).toBe('input/either: Expected union value');
    expect(check.firstMismatch({ id: 'x', tags: {}, both: { a: 1 } })).toBe('input/both/b: Expected required property');
    expect(compileInputCheck({}).firstMismatch('anything')).toBeUndefined();
  });

  it('takes `format` as an annotation (JSON Schema 2020-12 by default): it checks no format', () => {
    expect(compileInputCheck(Type.Object({ email: Type.String({ format: 'email' }) })).firstMismatch({ email: 'not an address' })).toBeUndefined();
  });

  it('refuses a schema that is not a JSON object, is too large, or that it cannot check as JSON Schema means it', () => {
    expect(refusal('string')).toEqual({
      reason: 'invalid_input_schema',
      message: expect.stringContaining('workflow w 1: inputSchema must be a JSON Schema object'),
    });
    expect(refusal([])).toMatchObject({ reason: 'invalid_input_schema' });
    const large = Type.Object({ big: Type.String({ description: 'x'.repeat(INPUT_SCHEMA_MAX_BYTES) }) });
    expect(refusal(large)).toMatchObject({ reason: 'input_schema_too_large' });
    expect(refusal({ type: 'object', properties: { a: { $ref: '#/defs/a' } } })).toEqual({
      reason: 'invalid_input_schema',
      message: 'workflow w 1: inputSchema/properties/a/$ref is not a keyword the input check supports ($ref and conditionals are not)',
    });
    expect(refusal({ minLength: 2 }).message).toContain('uses minLength: name the JSON type it constrains');
    expect(refusal({ type: 'date' }).message).toContain('inputSchema/type must be one of');
    expect(refusal({ type: 'string', pattern: '(' }).message).toContain('inputSchema/pattern is not a regular expression');
    expect(refusal({ type: 'array', items: [{ type: 'string' }] }).message).toContain('needs additionalItems false');
    expect(refusal({ const: { a: 1 } }).message).toContain('inputSchema/const must be a string, a number, a boolean or null');
    expect(refusal({ type: 'string', description: 'nul \u0000' })).toMatchObject({ reason: 'json_nul_character' });
  });

  it("refuses a keyword's value of the wrong type, and a property every JavaScript object has (it could not be told missing)", () => {
    expect(refusal({ type: 'string', minLength: '3' }).message).toContain('inputSchema/minLength must be a non-negative integer');
    expect(refusal({ type: 'number', exclusiveMinimum: true }).message).toContain('inputSchema/exclusiveMinimum must be a number');
    expect(refusal({ type: 'number', multipleOf: 0 }).message).toContain('inputSchema/multipleOf must be a number above 0');
    expect(refusal({ type: 'array', uniqueItems: 'yes' }).message).toContain('inputSchema/uniqueItems must be true or false');
    expect(refusal({ type: 'object', required: ['constructor'] }).message).toContain('names constructor, which every JavaScript object has');
    expect(refusal(JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}')).message).toContain('names __proto__');
  });

  it('is what a registration may carry: the contract refuses what readInputSchema refuses', () => {
    const registration = (inputSchema: unknown) => ({
      subscriber: 'http',
      failedOver: false,
      concurrency: 1,
      runsHeld: 0,
      intervalMs: 1000,
      workflows: [{ name: 'w', version: '1', shards: [], inputSchema }],
    });
    const asSent = JSON.parse(JSON.stringify(Order));
    expect(decode(WorkerRegistration, registration(asSent), 'body').workflows[0].inputSchema).toEqual(asSent);
    expect(() => decode(WorkerRegistration, registration({ $ref: 'x' }), 'body')).toThrow(
      expect.objectContaining({ reason: 'invalid_input_schema', message: expect.stringContaining('workflows[0].inputSchema must be a JSON Schema object') }),
    );
  });
});
