"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const globals_1 = require("@jest/globals");
const env_reader_1 = require("./env-reader");
(0, globals_1.describe)('EnvReader', () => {
    (0, globals_1.it)('uses the fallback when a variable is unset or empty', () => {
        const env = new env_reader_1.EnvReader({ EMPTY: '' });
        (0, globals_1.expect)(env.integer('MISSING', 7, 0, 10)).toBe(7);
        (0, globals_1.expect)(env.integer('EMPTY', 7, 0, 10)).toBe(7);
        (0, globals_1.expect)(env.string('MISSING', 'x')).toBe('x');
    });
    (0, globals_1.it)('names the variable and the expectation when a value is malformed', () => {
        const env = new env_reader_1.EnvReader({ PORT: 'abc', BIG: '99', DB: 'mysql://x' });
        (0, globals_1.expect)(() => env.integer('PORT', 1, 0, 65535)).toThrow(new env_reader_1.ConfigError('PORT must be an integer from 0 to 65535, got "abc"'));
        (0, globals_1.expect)(() => env.integer('BIG', 1, 0, 10)).toThrow('BIG must be an integer from 0 to 10');
        (0, globals_1.expect)(() => env.url('DB', ['postgres', 'postgresql'])).toThrow('DB must be a postgres or postgresql URL');
        (0, globals_1.expect)(() => env.string('NEEDED')).toThrow('NEEDED is required');
    });
    (0, globals_1.it)('never echoes a password', () => {
        (0, globals_1.expect)((0, env_reader_1.redact)('postgres://user:secret@host:5432/db')).toBe('postgres://user:***@host:5432/db');
        (0, globals_1.expect)(() => new env_reader_1.EnvReader({ DB: 'ftp://u:secret@h/db' }).url('DB', ['postgres'])).toThrow(/u:\*\*\*@h/);
    });
});
//# sourceMappingURL=env-reader.spec.js.map