import { describe, expect, it } from '@jest/globals';
import type { IncomingHttpHeaders } from 'node:http';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { BODY_DISCARD_FACTOR, readBody } from './body-reader';

const LIMIT = 1024;

/** Reads `chunks` as a request body of `headers`: the text or the refusal's reason, and how much was read before. */
async function read(chunks: Buffer[], headers: IncomingHttpHeaders = {}): Promise<{ text?: string; reason?: string; read: number }> {
  const raw = new PassThrough();
  let read = 0;
  raw.on('data', (chunk: Buffer) => {
    read += chunk.length;
  });
  raw.pause();
  const outcome = new Promise<{ text?: string; reason?: string; read: number }>((resolve) =>
    readBody(headers, raw, LIMIT, (error, text) => resolve(error ? { reason: (error as { reason?: string }).reason, read } : { text, read })),
  );
  for (const chunk of chunks) raw.write(chunk);
  raw.end();
  return outcome;
}

const bytes = (length: number) => Buffer.alloc(length, 'x');

describe('readBody', () => {
  it('reads a body within the limit as UTF-8 text, and a gzip one inflated', async () => {
    expect(await read([Buffer.from('{"a":'), Buffer.from('"é"}')])).toEqual({ text: '{"a":"é"}', read: 10 });
    const zipped = gzipSync('{"zipped":true}');
    expect(await read([zipped], { 'content-encoding': 'gzip' })).toEqual({ text: '{"zipped":true}', read: zipped.length });
  });

  it('refuses a body over the limit only once it read the rest of it (so that the client is done sending)', async () => {
    expect(await read([bytes(LIMIT), bytes(1), bytes(LIMIT)])).toEqual({ reason: 'payload_too_large', read: 2 * LIMIT + 1 });
  });

  it('stops reading past BODY_DISCARD_FACTOR times the limit, and refuses one announced longer without reading it', async () => {
    const past = await read(Array.from({ length: BODY_DISCARD_FACTOR + 3 }, () => bytes(LIMIT)));
    expect(past).toEqual({ reason: 'payload_too_large', read: (BODY_DISCARD_FACTOR + 1) * LIMIT });
    const announced = await read([bytes(10)], { 'content-length': String(BODY_DISCARD_FACTOR * LIMIT + 1) });
    expect(announced).toEqual({ reason: 'payload_too_large', read: 0 });
  });

  it('refuses gzip that inflates past the limit as too large (counted inflated), and gzip cut short as invalid', async () => {
    const bomb = gzipSync(bytes(100 * LIMIT));
    expect(await read([bomb], { 'content-encoding': 'gzip' })).toEqual({ reason: 'payload_too_large', read: bomb.length });
    const cut = gzipSync(bytes(100)).subarray(0, -4);
    expect(await read([cut], { 'content-encoding': 'gzip' })).toEqual({ reason: 'invalid_content_encoding', read: cut.length });
    expect(await read([Buffer.from('{}')], { 'content-encoding': 'deflate' })).toEqual({ reason: 'invalid_content_encoding', read: 2 });
  });

  it('refuses a content coding it does not inflate, after reading the body', async () => {
    expect(await read([bytes(10)], { 'content-encoding': 'compress' })).toEqual({ reason: 'unsupported_content_encoding', read: 10 });
  });
});
