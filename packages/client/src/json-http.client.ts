import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import {
  DurableError,
  type Endpoint,
  type EndpointCall,
  type EndpointResult,
  ErrorBody,
  endpointRequest,
  type HttpMethod,
  RevisionConflictError,
  rebuildError,
} from '@nest-durable/common';

/**
 * An error answer of the coordinator: the DurableError subclass its `reason` names (`run_not_found`: a
 * RunNotFoundError; a reason this client does not know: a DurableError), with the answer's HTTP `statusCode`.
 */
export type AnsweredError<E extends DurableError = DurableError> = E & { readonly statusCode: number; readonly body?: unknown };

/** The error an answer of `statusCode` with `reason` and `message` reports (see AnsweredError); `body`: the answer's whole body. */
export function answeredError(statusCode: number, reason: string, message: string, body?: unknown): AnsweredError {
  return Object.assign(rebuildError(reason, message), body === undefined ? { statusCode } : { statusCode, body });
}

/** Whether `error` is an error answer of the coordinator, rather than an error of this process. */
export function isAnsweredError(error: unknown): error is AnsweredError {
  return error instanceof DurableError && typeof (error as { statusCode?: unknown }).statusCode === 'number';
}

/** The coordinator could not be reached, or answered with something that is not our API. Worth retrying. */
export class CoordinatorUnavailableError extends DurableError {
  constructor(message: string, cause?: unknown) {
    super('coordinator_unavailable', message, { cause });
  }
}

export function isRevisionConflict(error: unknown): boolean {
  return isAnsweredError(error) && error instanceof RevisionConflictError;
}

/** A failure worth retrying: the coordinator was unreachable or failed on its side. */
export function isTransient(error: unknown): boolean {
  return error instanceof CoordinatorUnavailableError || (isAnsweredError(error) && error.statusCode >= 500);
}

/** Whether `value` is an http or https URL (what a coordinator's base URL must be). */
export function isHttpUrl(value: unknown): value is string {
  return typeof value === 'string' && URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);
}

/**
 * What bounds one request: the caller's `signal` ends it; waiting more than `timeoutMs` (a positive number of
 * milliseconds) for the answer once the request is sent, or for the rest of its body, it fails as unreachable
 * (undici's coarse timers: up to about a second late, for deadlines of seconds).
 */
export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Headers of this request alone, beside the client's own (a start's trace context). */
  headers?: Record<string, string>;
}

/**
 * The connections of every client in the process, kept alive between requests (one pool per coordinator
 * origin). One request per connection at a time, so a long-poll claim holds up no other request, and as many
 * connections as requests in flight.
 */
const connections = new Agent({ pipelining: 1, connections: null });

/** Small JSON-over-HTTP client shared by the typed workflow client and the worker protocol. */
export class JsonHttpClient {
  private readonly origin: string;
  private readonly pathPrefix: string;
  private readonly jsonHeaders: Record<string, string>;

  constructor(
    baseUrl: string,
    private readonly headers: Record<string, string> = {},
  ) {
    const url = new URL(baseUrl);
    this.origin = url.origin;
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.jsonHeaders = { ...headers, 'content-type': 'application/json' };
  }

  /** Calls one endpoint of the contract, with what its schemas say it sends and answers. */
  call<E extends Endpoint>(endpoint: E, call: EndpointCall<E>, options?: RequestOptions): Promise<EndpointResult<E>> {
    const { method, path, body } = endpointRequest(endpoint, call);
    return this.request<EndpointResult<E>>(method, path, body, options);
  }

  /**
   * Calls an endpoint that answers with a stream (`text/event-stream`): resolves with its body, unread, once
   * the headers arrived; an error answer rejects as `call` does. `signal` ends the stream too (destroying the
   * body with its reason); so does destroying the body.
   */
  async open<E extends Endpoint>(endpoint: E, call: EndpointCall<E>, signal?: AbortSignal): Promise<Readable> {
    const { method, path } = endpointRequest(endpoint, call);
    const response = await this.send(method, path, undefined, signal);
    if (response.statusCode >= 300) await this.read(method, path, response, signal);
    return response.body;
  }

  async request<T>(method: HttpMethod, path: string, body?: unknown, { signal, timeoutMs, headers }: RequestOptions = {}): Promise<T> {
    return this.read<T>(method, path, await this.send(method, path, body, signal, timeoutMs, headers), signal, timeoutMs);
  }

  /**
   * Sends the request; resolves once the answer's headers arrived. `timeoutMs` bounds the wait for them once the
   * request is sent, and each wait for more of the body: undici's own timers, which it sets for every request
   * anyway (an AbortController and a timer of our own per request were 6% of a worker's CPU).
   */
  private async send(
    method: HttpMethod,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    timeoutMs?: number,
    extraHeaders?: Record<string, string>,
  ): Promise<Dispatcher.ResponseData> {
    const headers = body === undefined ? this.headers : this.jsonHeaders;
    try {
      return await connections.request({
        origin: this.origin,
        path: this.pathPrefix + path,
        method,
        headers: extraHeaders ? { ...headers, ...extraHeaders } : headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (error) {
      throw transportError(method, path, error, signal, timeoutMs);
    }
  }

  /** Reads the answer's body: its JSON if it succeeded, else the error it reports. */
  private async read<T>(method: string, path: string, response: Dispatcher.ResponseData, signal: AbortSignal | undefined, timeoutMs?: number): Promise<T> {
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw transportError(method, path, error, signal, timeoutMs);
    }
    let parsed: unknown;
    try {
      parsed = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      throw new CoordinatorUnavailableError(`${method} ${path}: HTTP ${response.statusCode} with a non-JSON body`);
    }
    if (response.statusCode >= 300) {
      const error = parsed as Partial<ErrorBody> | undefined;
      // The body goes with the error: some answers carry more than the error body (an update's 422 carries the update).
      throw answeredError(
        response.statusCode,
        error?.reason ?? `http_${response.statusCode}`,
        error?.message ?? (text || `HTTP ${response.statusCode}`),
        parsed,
      );
    }
    return parsed as T;
  }
}

/** undici's codes for a request past its `headersTimeout` or `bodyTimeout`. */
const DEADLINE_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * What a request that failed in transit rejects with: an abort's own reason, anything else (its deadline passed
 * included) as the coordinator being unreachable.
 */
function transportError(method: string, path: string, error: unknown, signal: AbortSignal | undefined, timeoutMs: number | undefined): unknown {
  if (signal?.aborted) return error;
  const code = (error as { code?: string }).code;
  if (code !== undefined && DEADLINE_CODES.has(code)) return new CoordinatorUnavailableError(`${method} ${path}: no answer in ${timeoutMs} ms`, error);
  return new CoordinatorUnavailableError(`${method} ${path}: ${code ?? (error as Error).message}`, error);
}
