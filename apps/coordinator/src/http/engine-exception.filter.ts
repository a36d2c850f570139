import { ErrorBody, RevisionConflictError } from '@nest-durable/common';
import { asDatabaseError } from '@app/persistence';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { refusalOf } from './error-statuses';

/** Stable reasons for errors raised by the HTTP layer itself rather than by our code. */
const HTTP_REASONS: Record<number, string> = {
  400: 'bad_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/**
 * Maps every error to `{statusCode, error, reason, message}`: our errors with the status of their reason
 * (error-statuses.ts), framework errors by status, anything else (a reason without a status included) to a
 * 500 that is logged (and never a client's fault).
 */
@Catch()
export class EngineExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger(EngineExceptionFilter.name);

  constructor(private readonly metrics: CoordinatorMetrics) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const body = this.toBody(exception);
    if (reply.sent || reply.raw.headersSent) return;
    reply.status(body.statusCode).send(body);
  }

  private toBody(thrown: unknown): ErrorBody {
    // A read through the ORM reports a lost connection as its own error: 503 like every other.
    const exception = asDatabaseError(thrown);
    if (exception instanceof RevisionConflictError) this.metrics.revisionConflicts.inc();
    const refusal = refusalOf(exception);
    if (refusal) return errorBody(refusal.statusCode, refusal.reason, refusal.message);
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      // The fastify adapter wraps Fastify's own errors (e.g. a body over the limit) as HttpExceptions.
      return errorBody(status, HTTP_REASONS[status] ?? `http_${status}`, exception.message);
    }
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return errorBody(500, 'internal_error', 'internal error; see the coordinator log');
  }
}

/**
 * Answers what Fastify's router refuses before any hook or filter runs: a path that is not percent-encoded UTF-8
 * (`FST_ERR_BAD_URL`, the one such error these routes can raise).
 */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode ?? 400;
  reply.status(status).send(errorBody(status, error.code === 'FST_ERR_BAD_URL' ? 'invalid_url_encoding' : `http_${status}`, error.message));
}

/** What Node's HTTP parser refuses before there is a request to route, by its error code (anything else: 400). */
const CLIENT_ERRORS: Record<string, { status: number; reason: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: 'headers_too_large', message: 'the request line and headers exceed 16 KiB (a URL that long: send less in it)' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'request_timeout', message: 'the request was not received in time' },
};

/**
 * Answers what Node's HTTP parser refuses (a URL or headers over its 16 KiB, a malformed request, a request not received
 * in time) with the API's error body, and closes the connection (its rest cannot be read as a request), as Fastify's
 * own handler does but with a `reason`.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, reason, message } = CLIENT_ERRORS[error.code ?? ''] ?? {
    status: 400,
    reason: 'bad_request',
    message: `not an HTTP request (${error.code ?? error.message})`,
  };
  const body = JSON.stringify(errorBody(status, reason, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function errorBody(statusCode: number, reason: string, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', reason, message };
}
