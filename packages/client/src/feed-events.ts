import { API, type FeedEvent, type RunChange, type RunProgress } from '@nest-durable/common';
import type { JsonHttpClient } from './json-http.client';
import type { FeedFilter } from './workflow.client.types';

/** The live feed (WorkflowClient.feed): `open` once the request is answered, then the events it sends. */
export async function* openFeed(http: JsonHttpClient, filter: FeedFilter, signal?: AbortSignal): AsyncGenerator<FeedEvent> {
  const body = await http.open(API.feed, { query: filter }, signal);
  try {
    yield { type: 'open' };
    yield* readFeedEvents(body);
  } finally {
    // Left at `open` (or by an abort) the body may not have been read to its end: close the connection.
    body.destroy();
  }
}

/**
 * The events of a `text/event-stream` body, as the live feed (GET /v1/feed) sends them: `run`, `progress` and `resync`;
 * comments (keep-alives) and events of other types are skipped. Ends when the body ends.
 */
export async function* readFeedEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<FeedEvent> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end = buffered.indexOf('\n\n');
    while (end >= 0) {
      const event = parseEvent(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      if (event) yield event;
      end = buffered.indexOf('\n\n');
    }
  }
}

/** One event block: its `event:` and `data:` lines (the feed sends no multi-line data). */
function parseEvent(block: string): FeedEvent | undefined {
  let type = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) type = line.slice(6).trim();
    else if (line.startsWith('data:')) data += line.slice(5).trim();
  }
  if (type === 'run') return { type, data: JSON.parse(data) as RunChange };
  if (type === 'progress') return { type, data: JSON.parse(data) as RunProgress };
  if (type === 'resync') return { type };
  return undefined;
}
