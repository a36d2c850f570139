import { DatabaseUnavailableError } from '@nest-durable/common';

/**
 * SQLSTATEs and socket errors that mean the connection (not the statement) failed: class 08
 * (connection exception) is matched by prefix; 57P01-57P03 are an administrator's termination, a
 * server crash and a server still starting (crash recovery); 53300 is no free connection slot; 25006 (a write
 * refused as read-only) means the server is no longer the primary (a failover: the session is dropped and the
 * primary searched for, see PrimaryLocator), and nothing was written.
 */
const LOST_CODES = new Set(['57P01', '57P02', '57P03', '53300', '25006', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/** node-postgres reports a dead or unreachable connection with these messages and no code. */
const LOST_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'timeout exceeded when trying to connect',
  'Client was closed and is not queryable',
];

/** Whether `error` (from node-postgres, or TypeORM wrapping it) means the connection was lost or could not be made. */
export function isConnectionLoss(error: unknown): boolean {
  const cause = (error as { driverError?: unknown } | null)?.driverError ?? error;
  if (!(cause instanceof Error)) return false;
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || LOST_CODES.has(code))) return true;
  return LOST_MESSAGES.some((message) => cause.message.startsWith(message));
}

/** The error to answer with: a lost connection becomes DatabaseUnavailableError (503), anything else stays as it is. */
export function asDatabaseError(error: unknown): unknown {
  return isConnectionLoss(error) ? new DatabaseUnavailableError((error as Error).message) : error;
}
