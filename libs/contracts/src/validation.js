"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.JSON_MAX_BYTES = exports.KEY_MAX_LENGTH = exports.IDENTIFIER_MAX_LENGTH = void 0;
exports.fail = fail;
exports.requireObject = requireObject;
exports.rejectUnknownFields = rejectUnknownFields;
exports.parseIdentifier = parseIdentifier;
exports.parseKey = parseKey;
exports.parseRunId = parseRunId;
exports.parseInteger = parseInteger;
exports.parseTimestamp = parseTimestamp;
exports.parseJson = parseJson;
const errors_1 = require("./errors");
/**
 * One rule for every identifier that reaches the database columns and (later) Redis keys:
 * workflow names, versions, shards and event names. Keys are built by joining identifiers with
 * ':' so the character set excludes it.
 */
exports.IDENTIFIER_MAX_LENGTH = 128;
const IDENTIFIER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Idempotency keys and worker ids are chosen by users: any printable text, bounded. */
exports.KEY_MAX_LENGTH = 255;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** JSON documents (run input, task output, run output) are bounded in size. */
exports.JSON_MAX_BYTES = 1024 * 1024;
function fail(reason, message) {
    throw new errors_1.InvalidRequestError(reason, message);
}
function requireObject(value, what) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        fail('invalid_body', `${what} must be a JSON object`);
    }
    return value;
}
/** Rejects fields the endpoint does not know, so a typo is an error rather than silently ignored. */
function rejectUnknownFields(body, allowed, what) {
    const unknown = Object.keys(body).filter((key) => !allowed.includes(key));
    if (unknown.length > 0) {
        fail('unknown_field', `${what} has unknown field(s): ${unknown.join(', ')}`);
    }
}
function parseIdentifier(value, field) {
    if (typeof value !== 'string' || value.length === 0) {
        fail(`invalid_${field}`, `${field} must be a non-empty string`);
    }
    if (value.length > exports.IDENTIFIER_MAX_LENGTH || !IDENTIFIER_PATTERN.test(value)) {
        fail(`invalid_${field}`, `${field} must be 1-${exports.IDENTIFIER_MAX_LENGTH} characters of letters, digits, '.', '_' or '-', starting with a letter or digit`);
    }
    return value;
}
function parseKey(value, field) {
    if (typeof value !== 'string' || value.length === 0 || value.length > exports.KEY_MAX_LENGTH || CONTROL_CHARACTERS.test(value)) {
        fail(`invalid_${field}`, `${field} must be 1-${exports.KEY_MAX_LENGTH} characters with no control characters`);
    }
    return value;
}
function parseRunId(value, field = 'run_id') {
    if (typeof value !== 'string' || !UUID_PATTERN.test(value)) {
        fail(`invalid_${field}`, `${field} must be a UUID`);
    }
    return value.toLowerCase();
}
function parseInteger(value, field, min, max) {
    const parsed = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
    if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < min || parsed > max) {
        fail(`invalid_${field}`, `${field} must be an integer from ${min} to ${max}`);
    }
    return parsed;
}
function parseTimestamp(value, field) {
    const date = typeof value === 'string' ? new Date(value) : undefined;
    if (!date || Number.isNaN(date.getTime())) {
        fail(`invalid_${field}`, `${field} must be an ISO 8601 timestamp`);
    }
    return date;
}
/**
 * Accepts any JSON value except strings containing NUL, which PostgreSQL jsonb rejects
 * (SQLSTATE 22P05) and which would otherwise wedge a run on every redelivery.
 */
function parseJson(value, field) {
    if (value === undefined)
        return null;
    assertNoNul(value, field);
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > exports.JSON_MAX_BYTES) {
        fail(`${field}_too_large`, `${field} is ${bytes} bytes; the limit is ${exports.JSON_MAX_BYTES}`);
    }
    return value;
}
function assertNoNul(value, field) {
    if (typeof value === 'string') {
        if (value.includes('\u0000'))
            fail('json_nul_character', `${field} contains a NUL character (\\u0000)`);
    }
    else if (Array.isArray(value)) {
        for (const item of value)
            assertNoNul(item, field);
    }
    else if (value !== null && typeof value === 'object') {
        for (const [key, item] of Object.entries(value)) {
            if (key.includes('\u0000'))
                fail('json_nul_character', `${field} contains a NUL character (\\u0000)`);
            assertNoNul(item, field);
        }
    }
}
//# sourceMappingURL=validation.js.map