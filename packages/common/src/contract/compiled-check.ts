import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';

const checks = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** The check of `schema` compiled by TypeBox (faster than interpreting it: docs/benchmarks.md), once per schema. */
export function compiled(schema: TSchema): TypeCheck<TSchema> {
  let check = checks.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    checks.set(schema, check);
  }
  return check;
}
