import { describe, expect, it } from '@jest/globals';
import { describeDatabase, parseDatabaseUrl } from './database-url';

describe('parseDatabaseUrl (libpq multi-host URIs)', () => {
  it('keeps one host as it is: unchecked, the URL untouched', () => {
    expect(parseDatabaseUrl('postgres://app:pw@db:6432/app?sslmode=require')).toEqual({
      hosts: [{ host: 'db', port: 6432 }],
      url: 'postgres://app:pw@db:6432/app?sslmode=require',
      targetSessionAttrs: undefined,
    });
    expect(parseDatabaseUrl('postgresql:///app')).toEqual({ hosts: [], url: 'postgresql:///app', targetSessionAttrs: undefined });
  });

  it('lists several hosts in order (default port 5432, IPv6 in brackets) and checks sessions read-write unless told primary', () => {
    expect(parseDatabaseUrl('postgres://app:pw@a,[::1]:5433,c:5434/app?application_name=x')).toEqual({
      hosts: [
        { host: 'a', port: 5432 },
        { host: '::1', port: 5433 },
        { host: 'c', port: 5434 },
      ],
      url: 'postgres://app:pw@a/app?application_name=x',
      targetSessionAttrs: 'read-write',
    });
    const primary = parseDatabaseUrl('postgres://a:1,b:2/app?target_session_attrs=primary&sslmode=disable');
    expect(primary).toMatchObject({ url: 'postgres://a:1/app?sslmode=disable', targetSessionAttrs: 'primary' });
    expect(parseDatabaseUrl('postgres://a:1/app?target_session_attrs=read-write')).toMatchObject({
      hosts: [{ host: 'a', port: 1 }],
      targetSessionAttrs: 'read-write',
    });
  });

  it.each([
    ['http://a/app', 'must be a postgres:// or postgresql:// URL'],
    ['postgres://a,,b/app', 'has a bad host ""'],
    ['postgres://a:0,b/app', 'has a bad host "a:0"'],
    ['postgres://a:x,b/app', 'has a bad host "a:x"'],
    ['postgres://a,b/app?target_session_attrs=any', 'has target_session_attrs=any: the coordinator writes, so it must be read-write or primary'],
    ['postgres:///app?target_session_attrs=primary', 'has target_session_attrs but no host to check'],
  ])('refuses %s', (url, message) => {
    expect(() => parseDatabaseUrl(url)).toThrow(message);
  });

  it('describes the database for a log line with every host and without the password', () => {
    expect(describeDatabase(parseDatabaseUrl('postgres://app:secret@db1,[::1]:5433/app?target_session_attrs=primary'))).toBe('db1:5432,[::1]:5433/app');
  });
});
