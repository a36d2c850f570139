import { EngineError, ErrorBody, RevisionConflictError } from '@nest-durable/client';
import { asDatabaseError } from '@app/persistence';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/** Stable reasons for errors raised by the HTTP layer itself rather than by our code. */
const HTTP_REASONS: Record<number, string> = {
  400: 'bad_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/**
 * Maps every error to `{statusCode, error, reason, message}`: domain errors by their class,
 * framework errors by status, anything else to a 500 that is logged (and never a client's fault).
 */
@Catch()
export class EngineExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger(EngineExceptionFilter.name);

  constructor(private readonly metrics: CoordinatorMetrics) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    const body = this.toBody(exception);
    if (response.headersSent) return;
    response.status(body.statusCode).json(body);
  }

  private toBody(thrown: unknown): ErrorBody {
    // A read through the ORM reports a lost connection as its own error: 503 like every other.
    const exception = asDatabaseError(thrown);
    if (exception instanceof RevisionConflictError) this.metrics.revisionConflicts.inc();
    if (exception instanceof EngineError) {
      return errorBody(exception.statusCode, exception.reason, exception.message);
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      // The express adapter wraps body-parser's JSON syntax error, and the URIError of a path that is
      // not percent-encoded UTF-8, as a 400 with that cause.
      const reason =
        exception.cause instanceof SyntaxError ? 'invalid_json' : exception.cause instanceof URIError ? 'invalid_url_encoding' : HTTP_REASONS[status];
      return errorBody(status, reason ?? `http_${status}`, exception.message);
    }
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return errorBody(500, 'internal_error', 'internal error; see the coordinator log');
  }
}

export function errorBody(statusCode: number, reason: string, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', reason, message };
}
