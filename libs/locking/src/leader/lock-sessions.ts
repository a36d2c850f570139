/** Injection token of the app's LockSessions (the coordinator's: PostgreSQL advisory locks, from PersistenceModule). */
export const LOCK_SESSIONS = Symbol('LOCK_SESSIONS');

/**
 * A session holding named locks until it ends: when its process dies, the store ends the session and frees
 * them. Leader election needs nothing more of the store it runs on.
 */
export interface LockSession {
  /** Resolves when the session answers; rejects when it is gone (its locks may already be someone else's). */
  probe(): Promise<void>;
  /** Takes the named lock for this session if no other session holds it. */
  tryLock(name: string): Promise<boolean>;
  /** Ends the session, freeing its locks. */
  end(): Promise<void>;
}

export interface LockSessions {
  open(): Promise<LockSession>;
}
