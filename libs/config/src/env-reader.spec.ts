import { describe, expect, it } from '@jest/globals';
import { DurableError } from '@nest-durable/common';
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

  it('throws a DurableError of reason config_invalid', () => {
    const error = new ConfigError('NEEDED is required');
    expect(error).toBeInstanceOf(DurableError);
    expect([error.name, error.reason, error.message]).toEqual(['ConfigError', 'config_invalid', 'NEEDED is required']);
  });

  it('takes an IP address or a host name to listen on, and names anything else', () => {
    const env = new EnvReader({ V4: '10.0.0.1', V6: '::1', NAME: 'api-1.internal', UNDERSCORE: 'not_a_host', OCTETS: '999.1.1.1', DASH: '-a.b' });
    expect(['V4', 'V6', 'NAME'].map((name) => env.host(name, '0.0.0.0'))).toEqual(['10.0.0.1', '::1', 'api-1.internal']);
    expect(env.host('MISSING', '0.0.0.0')).toBe('0.0.0.0');
    expect(() => env.host('UNDERSCORE', '0.0.0.0')).toThrow(new ConfigError('UNDERSCORE must be an IP address or a host name, got "not_a_host"'));
    expect(() => env.host('OCTETS', '0.0.0.0')).toThrow('OCTETS must be an IP address or a host name');
    expect(() => env.host('DASH', '0.0.0.0')).toThrow('DASH must be an IP address or a host name');
  });

  it('checks each item of a list, naming the variable and the item', () => {
    const env = new EnvReader({ SHARDS: 'eu, us ,a b' });
    const parse = (item: string) => {
      if (item.includes(' ')) throw new Error('shard must have no spaces');
      return item;
    };
    expect(() => env.listOf('SHARDS', parse)).toThrow(new ConfigError('SHARDS: shard must have no spaces, got "a b"'));
    expect(new EnvReader({ SHARDS: 'eu, us' }).listOf('SHARDS', parse)).toEqual(['eu', 'us']);
    expect(env.listOf('MISSING', parse)).toEqual([]);
  });

  it('reads an optional value with a parser, naming the variable when it refuses it', () => {
    const parse = (value: string) => {
      if (value.includes(' ')) throw new Error('build must have no spaces');
      return value.toUpperCase();
    };
    const env = new EnvReader({ BUILD: 'v 1', GOOD: 'v1', EMPTY: '' });
    expect(() => env.optional('BUILD', parse)).toThrow(new ConfigError('BUILD: build must have no spaces, got "v 1"'));
    expect(env.optional('GOOD', parse)).toBe('V1');
    expect(env.optional('EMPTY', parse)).toBeUndefined();
    expect(env.optional('MISSING', parse)).toBeUndefined();
  });

  it('never echoes a password', () => {
    expect(redact('postgres://user:secret@host:5432/db')).toBe('postgres://user:***@host:5432/db');
    expect(() => new EnvReader({ DB: 'ftp://u:secret@h/db' }).url('DB', ['postgres'])).toThrow(/u:\*\*\*@h/);
  });
});
