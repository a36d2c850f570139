import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  /** Loads again, keeping what is shown until the answer arrives (live refreshes do not flicker). */
  reload: () => void;
}

/** Loads `load()` when `deps` change; an answer that arrives after a newer request started is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  // The caller names what `load` depends on, in `deps`.
  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error: Error) => mine === generation.current && setState((previous) => ({ data: previous.data, error, loading: false })),
    );
  }, deps);
  useEffect(reload, [reload]);
  return { ...state, reload };
}
