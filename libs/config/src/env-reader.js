"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EnvReader = exports.ConfigError = void 0;
exports.redact = redact;
/** Thrown when the environment is missing or malformed: its message is the one line to print. */
class ConfigError extends Error {
    name = 'ConfigError';
}
exports.ConfigError = ConfigError;
/**
 * Reads typed values out of an environment once, at start. Every problem names the variable
 * and what it expects, so a bad deployment fails with one readable line.
 */
class EnvReader {
    env;
    constructor(env) {
        this.env = env;
    }
    string(name, fallback) {
        const value = this.env[name];
        if (value === undefined || value === '') {
            if (fallback === undefined)
                throw new ConfigError(`${name} is required`);
            return fallback;
        }
        return value;
    }
    optionalString(name) {
        const value = this.env[name];
        return value === undefined || value === '' ? undefined : value;
    }
    integer(name, fallback, min, max) {
        const raw = this.env[name];
        if (raw === undefined || raw === '')
            return fallback;
        if (!/^-?\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
            throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
        }
        return Number(raw);
    }
    url(name, protocols, fallback) {
        const value = this.string(name, fallback);
        let parsed;
        try {
            parsed = new URL(value);
        }
        catch {
            throw new ConfigError(`${name} must be a URL (${protocols.join(' or ')}), got "${redact(value)}"`);
        }
        if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
            throw new ConfigError(`${name} must be a ${protocols.join(' or ')} URL, got "${redact(value)}"`);
        }
        return value;
    }
}
exports.EnvReader = EnvReader;
/** Hides a password in a URL so it never reaches a log line. */
function redact(url) {
    return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
//# sourceMappingURL=env-reader.js.map