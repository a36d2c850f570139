"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.uuidv7 = uuidv7;
const node_crypto_1 = require("node:crypto");
/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered ids keep
 * inserts at the right edge of the primary key index and let "newest first" be `ORDER BY id DESC`.
 */
function uuidv7(now = Date.now()) {
    const bytes = (0, node_crypto_1.randomBytes)(16);
    bytes.writeUIntBE(now, 0, 6);
    bytes[6] = (bytes[6] & 0x0f) | 0x70;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = bytes.toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
//# sourceMappingURL=ids.js.map