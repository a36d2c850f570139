import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, drawn from the CSPRNG a few kilobytes at a time, as `crypto.randomUUID` does:
 * one `randomBytes(16)` per id cost more than the rest of the id (a start spent ~1.5% of the
 * coordinator's CPU in it). Ten bytes an id: the 74 random bits of a UUIDv7 and its version and variant.
 */
const RANDOM_BYTES = 10;
const entropy = Buffer.allocUnsafe(RANDOM_BYTES * 512);
let drawn = entropy.length;

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered ids keep
 * inserts at the right edge of the primary key index and let "newest first" be `ORDER BY id DESC`.
 */
export function uuidv7(now: number = Date.now()): string {
  if (drawn + RANDOM_BYTES > entropy.length) {
    randomFillSync(entropy);
    drawn = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeUIntBE(now, 0, 6);
  entropy.copy(bytes, 6, drawn, drawn + RANDOM_BYTES);
  drawn += RANDOM_BYTES;
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The smallest UUIDv7 of the millisecond `ms`: `id >= uuidv7Floor(t)` selects the rows created from `t` on, on the primary key. */
export function uuidv7Floor(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}
