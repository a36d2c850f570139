/** SQLSTATE of a lock wait that reached lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

/** Whether `error` is a lock wait that reached lock_timeout (node-postgres' error, or TypeORM's around it). */
export function isLockTimeout(error: unknown): boolean {
  const { code, driverError } = (error ?? {}) as { code?: string; driverError?: { code?: string } };
  return (code ?? driverError?.code) === LOCK_NOT_AVAILABLE;
}

/**
 * Runs `attempt` again while it fails on a lock timeout, at most `attempts` times, `pauseMs` apart: for work that
 * takes a lock other statements would queue behind, so that each attempt waits at most its lock_timeout and the
 * statements queued meanwhile go through in the pause.
 */
export async function retryOnLockTimeout<T>(attempt: () => Promise<T>, { attempts, pauseMs }: { attempts: number; pauseMs: number }): Promise<T> {
  for (let made = 1; ; made++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isLockTimeout(error) || made === attempts) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}
