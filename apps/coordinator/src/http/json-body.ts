import { assertJsonDepth, UnsupportedMediaTypeError } from '@nest-durable/client';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/** What the API reads as JSON: `application/json` and the `+json` types (RFC 6839), any parameters. */
const JSON_MEDIA_TYPES = ['application/json', 'application/*+json'];

/**
 * The one way a request body enters the coordinator, for every route: every endpoint of the API takes
 * JSON or nothing. In order: a body of another type is refused (415) rather than read as no body; the
 * JSON parser (size limit: 413, syntax: 400); the depth limit (400 `json_too_deep`), before any
 * validation or serialisation recurses into the body. Their errors go to the exception filter.
 */
export function useJsonBodies(app: NestExpressApplication, limitBytes: number): void {
  app.use(refuseOtherMediaTypes);
  app.useBodyParser('json', { limit: limitBytes, type: JSON_MEDIA_TYPES });
  app.use(limitJsonDepth);
}

/**
 * A request without a body (no Content-Length, or 0: what clients send for a POST with nothing to say,
 * like cancel or wake) needs no content type; one with a body must be JSON.
 */
function refuseOtherMediaTypes(request: Request, _response: Response, next: NextFunction): void {
  const sendsBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
  next(sendsBody && !request.is(JSON_MEDIA_TYPES) ? new UnsupportedMediaTypeError(request.headers['content-type']) : undefined);
}

function limitJsonDepth(request: Request, _response: Response, next: NextFunction): void {
  try {
    assertJsonDepth(request.body);
    next();
  } catch (error) {
    next(error);
  }
}
