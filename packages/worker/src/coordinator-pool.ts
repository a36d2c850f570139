import { CoordinatorUnavailableError, isAnsweredError, JsonHttpClient, type RequestOptions } from '@nest-durable/client';
import { type Endpoint, type EndpointCall, type EndpointResult, endpointRequest, type HttpMethod } from '@nest-durable/common';
import { Logger } from '@nestjs/common';
import { WorkerSetupError } from './worker-setup.error';

/** How long a coordinator that failed is avoided at first; each failure in a row doubles it, up to MAX_AVOID_MS. */
const FIRST_AVOID_MS = 250;
const MAX_AVOID_MS = 5_000;

interface Member {
  url: string;
  http: JsonHttpClient;
  /** Failures in a row; 0 while it answers. */
  failures: number;
  /** Not chosen before this time (unless every coordinator is being avoided). */
  avoidUntil: number;
}

/**
 * The coordinators a worker talks to. They share one database, so any of them serves any request:
 * requests go round-robin over those answering, and one that fails in transit (unreachable, no answer
 * in time, 503 while it drains or lost its database) is avoided for a while and the same request goes
 * to the next. An avoided coordinator is tried again when its time is up (backing off while it keeps
 * failing), so a worker moves off a coordinator that stops answering and back when it returns.
 *
 * Sending a request again elsewhere is safe: every worker write is fenced by the run's revision or
 * keyed by its step (see CoordinatorApi), and a claim whose answer was lost only delays its runs until
 * their claim goes idle, as it would with one coordinator.
 */
export class CoordinatorPool {
  private readonly logger = new Logger(CoordinatorPool.name);
  private readonly members: Member[];
  private next = 0;

  constructor(urls: readonly string[], headers: Record<string, string>) {
    if (urls.length === 0) throw new WorkerSetupError('at least one coordinator URL is required');
    this.members = urls.map((url) => ({ url, http: new JsonHttpClient(url, headers), failures: 0, avoidUntil: 0 }));
  }

  get urls(): string[] {
    return this.members.map((member) => member.url);
  }

  /** Calls one endpoint of the contract (see `request`), with what its schemas say it sends and answers. */
  call<E extends Endpoint>(endpoint: E, call: EndpointCall<E>, options: RequestOptions = {}): Promise<EndpointResult<E>> {
    const { method, path, body } = endpointRequest(endpoint, call);
    return this.request<EndpointResult<E>>(method, path, body, options);
  }

  /**
   * Sends the request to one coordinator after another until one answers. `timeoutMs` bounds each
   * attempt (a coordinator that hangs, stopped or partitioned away, counts as failed); `signal` is
   * the caller's, ending every attempt.
   */
  async request<T>(method: HttpMethod, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    let lastError: unknown;
    for (const member of this.order()) {
      try {
        return await this.attempt<T>(member, method, path, body, options);
      } catch (error) {
        if (options.signal?.aborted || !failedInTransit(error)) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * One coordinator, the next in turn, for requests that must all reach the same one (an offer and its
   * withdrawal: see HandOffOffers). Nothing is sent elsewhere: a failure is the caller's to handle.
   */
  pinned(): <E extends Endpoint>(endpoint: E, call: EndpointCall<E>, options?: RequestOptions) => Promise<EndpointResult<E>> {
    const [member] = this.order();
    return (endpoint, call, options = {}) => {
      const { method, path, body } = endpointRequest(endpoint, call);
      return this.attempt(member, method, path, body, options);
    };
  }

  /** Sends the request to `member`, keeping its standing: avoided for a while when it failed in transit. */
  private async attempt<T>(member: Member, method: HttpMethod, path: string, body: unknown, options: RequestOptions): Promise<T> {
    try {
      const result = await member.http.request<T>(method, path, body, options);
      this.answered(member);
      return result;
    } catch (error) {
      if (!options.signal?.aborted) {
        if (failedInTransit(error)) this.failed(member, error as Error);
        else this.answered(member);
      }
      throw error;
    }
  }

  /** Each coordinator once: those not avoided first, starting with the next in turn; then the avoided, soonest back first. */
  private order(): Member[] {
    if (this.members.length === 1) return this.members;
    const now = Date.now();
    const start = this.next++ % this.members.length;
    const rotated = [...this.members.slice(start), ...this.members.slice(0, start)];
    const available = rotated.filter((member) => member.avoidUntil <= now);
    const avoided = rotated.filter((member) => member.avoidUntil > now).sort((a, b) => a.avoidUntil - b.avoidUntil);
    return [...available, ...avoided];
  }

  private answered(member: Member): void {
    if (member.failures > 0 && this.members.length > 1) this.logger.log(`coordinator ${member.url} answers again`);
    member.failures = 0;
    member.avoidUntil = 0;
  }

  private failed(member: Member, error: Error): void {
    member.failures++;
    member.avoidUntil = Date.now() + Math.min(FIRST_AVOID_MS * 2 ** (member.failures - 1), MAX_AVOID_MS);
    if (member.failures === 1 && this.members.length > 1) this.logger.warn(`coordinator ${member.url} failed (${error.message}); using the others`);
  }
}

/** The request may not have reached a working coordinator: worth sending to another one. */
function failedInTransit(error: unknown): boolean {
  return error instanceof CoordinatorUnavailableError || (isAnsweredError(error) && error.statusCode === 503);
}
