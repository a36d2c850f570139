import { type Endpoint, type EndpointCall, type EndpointResult, EngineError, ErrorBody, endpointRequest, type HttpMethod } from './contract';

/** An error response from the coordinator, rebuilt from its `{statusCode, reason, message}` body. */
export class EngineHttpError extends EngineError {
  constructor(
    readonly statusCode: number,
    reason: string,
    message: string,
  ) {
    super(reason, message);
  }
}

/** The coordinator could not be reached, or answered with something that is not our API. */
export class CoordinatorUnavailableError extends Error {
  override name = 'CoordinatorUnavailableError';
}

export function isRevisionConflict(error: unknown): boolean {
  return error instanceof EngineHttpError && error.reason === 'revision_conflict';
}

/** A failure worth retrying: the coordinator was unreachable or failed on its side. */
export function isTransient(error: unknown): boolean {
  return error instanceof CoordinatorUnavailableError || (error instanceof EngineHttpError && error.statusCode >= 500);
}

/** Whether `value` is an http or https URL (what a coordinator's base URL must be). */
export function isHttpUrl(value: unknown): value is string {
  return typeof value === 'string' && URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);
}

/** Small JSON-over-HTTP client shared by the typed workflow client and the worker protocol. */
export class JsonHttpClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly headers: Record<string, string> = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /** Calls one endpoint of the contract, with what its schemas say it sends and answers. */
  call<E extends Endpoint>(endpoint: E, call: EndpointCall<E>, signal?: AbortSignal): Promise<EndpointResult<E>> {
    const { method, path, body } = endpointRequest(endpoint, call);
    return this.request<EndpointResult<E>>(method, path, body, signal);
  }

  /**
   * Calls an endpoint that answers with a stream (`text/event-stream`): resolves with the response once its
   * headers arrived, its body unread; an error answer rejects as `call` does. `signal` ends the stream too.
   */
  async open<E extends Endpoint>(endpoint: E, call: EndpointCall<E>, signal?: AbortSignal): Promise<Response> {
    const { method, path } = endpointRequest(endpoint, call);
    const response = await this.send(method, path, undefined, signal, true);
    if (!response.ok) await this.parse(method, path, response);
    return response;
  }

  async request<T>(method: HttpMethod, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    return this.parse<T>(method, path, await this.send(method, path, body, signal, false));
  }

  /**
   * Sends the request. A stream's response stays tied to the caller's signal for as long as its body is read
   * (`stream`); any other request's only until its answer arrives.
   */
  private async send(method: HttpMethod, path: string, body: unknown, signal: AbortSignal | undefined, stream: boolean): Promise<Response> {
    let response: Response;
    // A signal of this request's own, tied to the caller's: fetch may keep its listener on a signal
    // after failing, and callers pass one long-lived signal to every request. A stream's body is read
    // after this returns, so it keeps the caller's signal itself.
    const own = stream ? undefined : new AbortController();
    const onAbort = () => own?.abort(signal?.reason);
    if (own && signal?.aborted) own.abort(signal.reason);
    if (own) signal?.addEventListener('abort', onAbort, { once: true });
    try {
      response = await fetch(this.baseUrl + path, {
        method,
        headers: body === undefined ? this.headers : { ...this.headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: own ? own.signal : signal,
      });
    } catch (error) {
      if (signal?.aborted) {
        // A deadline is the coordinator not answering (worth retrying); any other abort is the caller's.
        if ((signal.reason as Error | undefined)?.name === 'TimeoutError') {
          throw new CoordinatorUnavailableError(`${method} ${path}: no answer in time`);
        }
        throw error;
      }
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CoordinatorUnavailableError(`${method} ${path}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return response;
  }

  private async parse<T>(method: string, path: string, response: Response): Promise<T> {
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      throw new CoordinatorUnavailableError(`${method} ${path}: HTTP ${response.status} with a non-JSON body`);
    }
    if (!response.ok) {
      const error = parsed as Partial<ErrorBody> | undefined;
      throw new EngineHttpError(response.status, error?.reason ?? `http_${response.status}`, error?.message ?? (text || `HTTP ${response.status}`));
    }
    return parsed as T;
  }
}
