import { describe, expect, it } from '@jest/globals';
import { ConfigError, EnvReader, redact } from './env-reader';

describe('EnvReader', () => {
  it('uses the fallback when a variable is unset or empty', () => {
    const env = new EnvReader({ EMPTY: '' });
    expect(env.integer('MISSING', 7, 0, 10)).toBe(7);
    expect(env.integer('EMPTY', 7, 0, 10)).toBe(7);
    expect(env.string('MISSING', 'x')).toBe('x');
  });

  it('names the variable and the expectation when a value is malformed', () => {
    const env = new EnvReader({ PORT: 'abc', BIG: '99', DB: 'mysql://x' });
    expect(() => env.integer('PORT', 1, 0, 65535)).toThrow(new ConfigError('PORT must be an integer from 0 to 65535, got "abc"'));
    expect(() => env.integer('BIG', 1, 0, 10)).toThrow('BIG must be an integer from 0 to 10');
    expect(() => env.url('DB', ['postgres', 'postgresql'])).toThrow('DB must be a postgres or postgresql URL');
    expect(() => env.string('NEEDED')).toThrow('NEEDED is required');
  });

  it('never echoes a password', () => {
    expect(redact('postgres://user:secret@host:5432/db')).toBe('postgres://user:***@host:5432/db');
    expect(() => new EnvReader({ DB: 'ftp://u:secret@h/db' }).url('DB', ['postgres'])).toThrow(/u:\*\*\*@h/);
  });
});
