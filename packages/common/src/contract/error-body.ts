import { type Static, Type } from '@sinclair/typebox';

/** Body of every error response of the coordinator. */
export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String({ description: 'the HTTP status text' }),
    reason: Type.String({ description: 'stable and machine-readable: `invalid_<field>`, `unknown_field`, `run_not_found`, `revision_conflict`, …' }),
    message: Type.String({ description: 'one line for a human' }),
  },
  { additionalProperties: false, title: 'ErrorBody' },
);
export type ErrorBody = Static<typeof ErrorBody>;
