/** Redis Cluster splits its keys over this many hash slots; each slot is served by one master. */
export const HASH_SLOTS = 16_384;

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with. */
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

const utf8 = new TextEncoder();

/**
 * The hash slot of a Redis key, as Redis Cluster computes it: only the part between the first `{`
 * and the next `}` counts when that part is not empty (a hash tag), so keys sharing a tag share a
 * slot and may appear together in one command or script.
 */
export function hashSlot(key: string): number {
  const bytes = bytesOf(key);
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ bytes[i]) & 0xff]) & 0xffff;
  return crc % HASH_SLOTS;
}

/** UTF-8, with a fast path for ASCII (every key here is: names are validated). */
function bytesOf(key: string): Uint8Array {
  const bytes = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code > 0x7f) return utf8.encode(key);
    bytes[i] = code;
  }
  return bytes;
}
