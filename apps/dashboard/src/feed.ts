import type { API, EndpointCall, RunChange, RunProgress } from '@nest-durable/common';
import { ROUTES, routeRequest } from '@nest-durable/common/routes';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { useEffect, useRef } from 'preact/hooks';
import { authHeaders, setFields, tokenRefused } from './api';

/** Whose changes the feed carries: one run's, one workflow's, or (neither set) every run's. */
type FeedFilter = NonNullable<EndpointCall<(typeof API)['feed']>['query']>;

/** Without the feed (an older coordinator, or a proxy that cuts streams), pages refresh this often instead. */
const POLL_MS = 5_000;
const RECONNECT_MAX_MS = 10_000;
/** The refusals that ask to be tried again later (Request Timeout, Too Many Requests): the feed reconnects after them. */
const TRY_LATER = [408, 429];

/**
 * Follows GET /v1/feed (server-sent events: `event: run` per change, `event: resync` when some may have been missed), filtered by run id or workflow. Read with fetch, not
 * EventSource, because EventSource cannot send the bearer token. Reconnects with backoff; when the feed is
 * missing (404) it falls back to calling `onChange(null)` every POLL_MS. A refused token (401) is said as the API
 * calls say it (the app asks for the token again); another refusal (4xx) would only be refused again, so it stops.
 * `onProgress`, if given, gets each `event: progress` (a run's ctx.progress, as committed). Returns a function that stops it.
 */
export function followRuns(filter: FeedFilter, onChange: (change: RunChange | null) => void, onProgress?: (progress: RunProgress) => void): () => void {
  const controller = new AbortController();
  let stopped = false;
  let poll: ReturnType<typeof setInterval> | undefined;
  const { path } = routeRequest(ROUTES.feed, { query: setFields(filter) });

  const connect = async (delayMs: number): Promise<void> => {
    if (stopped) return;
    try {
      const response = await fetch(path, { headers: { ...authHeaders(), accept: 'text/event-stream' }, signal: controller.signal });
      if (response.status === 404) {
        poll = setInterval(() => onChange(null), POLL_MS);
        return;
      }
      if (response.status === 401) return tokenRefused();
      if (response.status >= 400 && response.status < 500 && !TRY_LATER.includes(response.status)) return;
      if (!response.ok || !response.body) throw new Error(`feed answered ${response.status}`);
      // Connected: what changed while we were away is read again once.
      onChange(null);
      const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (value.event === 'run') onChange(JSON.parse(value.data) as RunChange);
        if (value.event === 'progress') onProgress?.(JSON.parse(value.data) as RunProgress);
        // The coordinator may have missed changes (its LISTEN session reconnected): read everything again.
        if (value.event === 'resync') onChange(null);
      }
      delayMs = 500;
    } catch {
      if (stopped) return;
    }
    setTimeout(() => void connect(Math.min(delayMs * 2, RECONNECT_MAX_MS)), delayMs);
  };
  void connect(500);
  return () => {
    stopped = true;
    controller.abort();
    if (poll) clearInterval(poll);
  };
}

/**
 * Calls `refresh` whenever a run matching the filter changes (at most every 300 ms), and `onProgress` with each
 * progress one reports (as it comes: the worker already sends at most one per run every progressIntervalMs), for
 * as long as the component lives.
 */
export function useLiveRuns(filter: FeedFilter, refresh: () => void, enabled = true, onProgress?: (progress: RunProgress) => void): void {
  const latest = useRef(refresh);
  latest.current = refresh;
  const latestProgress = useRef(onProgress);
  latestProgress.current = onProgress;
  useEffect(() => {
    if (!enabled) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = followRuns(
      filter,
      () => {
        if (timer) return;
        timer = setTimeout(() => {
          timer = undefined;
          latest.current();
        }, 300);
      },
      (progress) => latestProgress.current?.(progress),
    );
    return () => {
      stop();
      if (timer) clearTimeout(timer);
    };
  }, [filter.runId, filter.workflow, enabled]);
}
