import { describe, expect, it } from '@jest/globals';
import { readFeedEvents } from './feed-events';

/** A body delivered in the given chunks, as a network would split it. */
function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>) {
  const events = [];
  for await (const event of readFeedEvents(stream)) events.push(event);
  return events;
}

describe('readFeedEvents', () => {
  const change = { id: 'a', workflow: 'echo', version: '1', status: 'running', revision: 1, at: '2026-12-01T00:00:00.000Z' };

  it('reads run and resync events split anywhere, skipping comments and unknown events', async () => {
    const text = `: connected\n\nevent: run\ndata: ${JSON.stringify(change)}\n\n: keep-alive\n\nevent: other\ndata: {}\n\nevent: resync\ndata: {}\n\n`;
    expect(await all(body(text.slice(0, 7), text.slice(7, 40), text.slice(40)))).toEqual([{ type: 'run', data: change }, { type: 'resync' }]);
  });

  it('leaves out an event the body ended in the middle of', async () => {
    expect(await all(body(`event: run\ndata: ${JSON.stringify(change)}\n`))).toEqual([]);
  });
});
