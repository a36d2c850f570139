import { assertJsonDepth, InvalidRequestError, UnsupportedMediaTypeError } from '@nest-durable/common';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { readBody } from './body-reader';

/** What the API reads as JSON: `application/json` and the `+json` types (RFC 6839), in UTF-8. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.!#$&^-]+\+)?json$/;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/**
 * The one way a request body enters the coordinator, for every route: every endpoint of the API takes
 * JSON or nothing. In order: a body of another type (or charset) is refused (415) rather than read as no
 * body; the body's reader (inflating gzip, deflate or br; size limit once inflated: 413, read to its end, see
 * body-reader.ts); the JSON parser (syntax: 400 `invalid_json`); the depth limit (400 `json_too_deep`), before any
 * validation or serialisation recurses into the body. Their errors go to the exception filter. Fastify reads no
 * body of a GET or HEAD request.
 */
export function useJsonBodies(fastify: FastifyInstance, limitBytes: number): void {
  // Fastify's own parsers (JSON with other error codes, and text/plain) would read what is refused here.
  fastify.removeAllContentTypeParsers();
  fastify.addHook('onRequest', refuseOtherMediaTypes);
  fastify.addContentTypeParser('*', (request, payload, done) =>
    readBody(request.headers, payload, limitBytes, (error, text) => (error ? done(error) : parseJson(request, text ?? '', done))),
  );
}

/**
 * A request without a body (no Content-Length, or 0: what clients send for a POST with nothing to say,
 * like cancel or wake) needs no content type; one with a body must be JSON.
 */
function refuseOtherMediaTypes(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const { 'content-length': length, 'transfer-encoding': encoding, 'content-type': type } = request.headers;
  const sendsBody = Number(length ?? 0) > 0 || encoding !== undefined;
  done(sendsBody && !isJsonInUtf8(type) ? new UnsupportedMediaTypeError(type) : undefined);
}

function isJsonInUtf8(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const charset = CHARSET.exec(contentType)?.[1].toLowerCase();
  return JSON_MEDIA_TYPE.test(contentType.split(';', 1)[0].trim().toLowerCase()) && (charset === undefined || charset === 'utf-8');
}

/** As Express's JSON parser read bodies: an empty one is `{}`, and only an object or an array is JSON enough. */
function parseJson(_request: FastifyRequest, text: string, done: (error: Error | null, body?: unknown) => void): void {
  if (text.length === 0) {
    done(null, {});
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    done(new InvalidRequestError('invalid_json', (error as SyntaxError).message));
    return;
  }
  if (typeof body !== 'object' || body === null) {
    done(new InvalidRequestError('invalid_json', 'the request body must be a JSON object or array'));
    return;
  }
  try {
    assertJsonDepth(body);
    done(null, body);
  } catch (error) {
    done(error as Error);
  }
}
