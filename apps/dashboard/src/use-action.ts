import { useState } from 'preact/hooks';

export interface ActionOutcome {
  /** What the last action did, in one sentence; cleared when another starts. */
  message?: string;
  /** Why the last action was refused (or failed); cleared when another starts. */
  error?: Error;
  /** Runs `action` (which resolves with its message), says its outcome, then has the page read its data again. */
  perform: (action: () => Promise<string>) => Promise<void>;
}

/**
 * The outcome of a page's actions: one at a time, so an earlier success is not shown beside a later refusal. The
 * page reads its data again after a refusal too: it often means the page is stale (a schedule deleted elsewhere).
 */
export function useAction(reload: () => void): ActionOutcome {
  const [message, setMessage] = useState<string>();
  const [error, setError] = useState<Error>();
  const perform = async (action: () => Promise<string>) => {
    setMessage(undefined);
    setError(undefined);
    try {
      setMessage(await action());
    } catch (caught) {
      setError(caught as Error);
    }
    reload();
  };
  return { message, error, perform };
}
