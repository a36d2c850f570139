import { InvalidRequestError, PayloadTooLargeError, UnsupportedContentEncodingError } from '@nest-durable/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * How much of a body over the limit is still read (and thrown away) before it is refused: this many times the limit,
 * in all. A refusal is only seen by a client that is done sending: Node's `fetch` and undici (the engine's own
 * client) read no answer while they write, and a server that answers early and closes leaves them a broken pipe
 * (`write EPIPE`) rather than the 413. A body longer than this (or announced longer) is refused at once and its
 * connection closed, so a client that keeps sending may only see the connection reset.
 */
export const BODY_DISCARD_FACTOR = 4;

/** The content codings a body may come in, inflated as they are read (what Express's body parser took). */
const INFLATERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

type Done = (error: Error | null, body?: string) => void;

/**
 * Reads a request's body as UTF-8 text, inflating a compressed one, with at most `limitBytes` once inflated. A body
 * over the limit, in an unknown coding or that does not inflate is refused only once it was read to its end (up to
 * BODY_DISCARD_FACTOR times the limit): the error is answered to a client that is done sending (see above).
 */
export function readBody(headers: IncomingHttpHeaders, raw: Readable, limitBytes: number, done: Done): void {
  const discardBytes = BODY_DISCARD_FACTOR * limitBytes;
  if (Number(headers['content-length']) > discardBytes) {
    done(new PayloadTooLargeError(limitBytes));
    return;
  }
  const coding = (headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const inflater = coding === 'identity' ? undefined : INFLATERS[coding]?.();
  const chunks: Buffer[] = [];
  let length = 0;
  let refusal: Error | undefined = coding !== 'identity' && !inflater ? new UnsupportedContentEncodingError(coding) : undefined;
  let rawLength = 0;
  let rawEnded = false;
  let finished = false;

  const finish = (error: Error | null, text?: string) => {
    if (finished) return;
    finished = true;
    raw.removeListener('data', onRaw);
    raw.removeListener('end', onRawEnd);
    raw.removeListener('error', onError);
    inflater?.destroy();
    done(error, text);
  };
  /** From the first problem on, the rest of the body is only counted, until it ends or passes the discard bound. */
  const refuse = (error: Error) => {
    refusal ??= error;
    chunks.length = 0;
    if (rawEnded) {
      finish(refusal);
    } else if (inflater) {
      // What the inflater holds would still be inflated (a small bomb, megabytes) only to be thrown away.
      raw.unpipe(inflater);
      inflater.destroy();
      raw.resume();
    }
  };
  const onRaw = (chunk: Buffer) => {
    rawLength += chunk.length;
    if (rawLength > discardBytes) finish(refusal ?? new PayloadTooLargeError(limitBytes));
  };
  const onBody = (chunk: Buffer) => {
    if (refusal) return;
    length += chunk.length;
    if (length > limitBytes) refuse(new PayloadTooLargeError(limitBytes));
    else chunks.push(chunk);
  };
  const onRawEnd = () => {
    rawEnded = true;
    if (refusal) finish(refusal);
    else if (!inflater) finish(null, Buffer.concat(chunks, length).toString('utf8'));
  };
  const onError = (error: Error & { statusCode?: number }) => {
    // The client went away mid-body (aborted): answered like Fastify's own reader did, though nobody may hear it.
    error.statusCode ??= 400;
    finish(error);
  };

  raw.on('data', onRaw);
  raw.on('end', onRawEnd);
  raw.on('error', onError);
  if (inflater && !refusal) {
    inflater.on('data', onBody);
    inflater.on('end', () => {
      if (!refusal) finish(null, Buffer.concat(chunks, length).toString('utf8'));
    });
    inflater.on('error', (error) => refuse(new InvalidRequestError('invalid_content_encoding', `the body is not valid ${coding}: ${error.message}`)));
    raw.pipe(inflater);
  } else if (!inflater) {
    raw.on('data', onBody);
  }
  raw.resume();
}
