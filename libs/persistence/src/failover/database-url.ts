/** One PostgreSQL server of DATABASE_URL's host list. */
export interface Endpoint {
  host: string;
  port: number;
}

/** What a session must be to be used: the coordinator writes, so only libpq's writable kinds. */
export const TARGET_SESSION_ATTRS = ['read-write', 'primary'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

/** DATABASE_URL, understood as libpq understands a URI with several hosts. */
export interface DatabaseTarget {
  /** The servers to try, in the URL's order. */
  hosts: Endpoint[];
  /**
   * The URL with its first host only and without `target_session_attrs`: what node-postgres parses for
   * everything but the host (user, password, database, sslmode, options…). Each session's host and port
   * are set to the primary's when it connects.
   */
  url: string;
  /**
   * Undefined for one host without `target_session_attrs`: the one server is used as it is, unchecked.
   * Otherwise every new session is checked as libpq does (`read-write`: `transaction_read_only` is off;
   * `primary`: not in recovery), and the servers are searched for one that passes. Several hosts
   * without the parameter mean `read-write`: libpq's default `any` could land on a standby.
   */
  targetSessionAttrs: TargetSessionAttrs | undefined;
}

const DEFAULT_PORT = 5432;
const URI = /^(postgres|postgresql):\/\/(?:([^@/?#]*)@)?([^/?#]*)(.*)$/s;
const HOST_PORT = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d+))?$/;

/**
 * Parses `postgres://user:password@host1:port1,host2:port2/database?target_session_attrs=read-write`
 * (libpq's multi-host URI; one host is the ordinary URL). Throws an Error saying what is wrong.
 */
export function parseDatabaseUrl(value: string): DatabaseTarget {
  const match = URI.exec(value);
  if (!match) throw new Error('must be a postgres:// or postgresql:// URL');
  const [, scheme, userInfo, hostList, rest] = match;
  // No host at all: node-postgres' default (a local socket or localhost), as before.
  const hosts = (hostList === '' ? [] : hostList.split(',')).map((item) => {
    const hostPort = HOST_PORT.exec(item);
    const port = Number(hostPort?.[2] ?? DEFAULT_PORT);
    if (!hostPort || !Number.isInteger(port) || port < 1 || port > 65_535)
      throw new Error(`has a bad host "${item}" (host or host:port, hosts separated by commas)`);
    return { host: hostPort[1].replace(/^\[(.*)\]$/, '$1'), port };
  });
  const single = `${scheme}://${userInfo === undefined ? '' : `${userInfo}@`}${hostList.split(',')[0]}${rest}`;
  let url: URL;
  try {
    url = new URL(single);
  } catch {
    throw new Error('is not a valid URL');
  }
  const requested = url.searchParams.get('target_session_attrs');
  url.searchParams.delete('target_session_attrs');
  if (requested !== null && !(TARGET_SESSION_ATTRS as readonly string[]).includes(requested)) {
    throw new Error(`has target_session_attrs=${requested}: the coordinator writes, so it must be ${TARGET_SESSION_ATTRS.join(' or ')}`);
  }
  if (requested !== null && hosts.length === 0) throw new Error('has target_session_attrs but no host to check');
  const targetSessionAttrs = (requested as TargetSessionAttrs | null) ?? (hosts.length > 1 ? 'read-write' : undefined);
  return { hosts, url: url.toString(), targetSessionAttrs };
}

/** The database for a log line, without the password: `host1:port1,host2:port2/database`. */
export function describeDatabase(target: DatabaseTarget): string {
  const url = new URL(target.url);
  return `${target.hosts.map(show).join(',')}${url.pathname}`;
}

/** `host:port` (`[v6]:port`), for messages. */
export function show(endpoint: Endpoint): string {
  return `${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`;
}
