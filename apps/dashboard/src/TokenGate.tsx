import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, api, token, whenUnauthorized } from './api';
import { Problem } from './components/Problem';

/**
 * Asks once for the client token when the coordinator wants one (GET /ui/config.json says), keeps it for the
 * browser session, and asks again if the API refuses it. With AUTH_DISABLED=true it never asks.
 */
export function TokenGate({ children }: { children: ComponentChildren }) {
  const [state, setState] = useState<'loading' | 'ask' | 'ready'>('loading');
  const [error, setError] = useState<Error>();
  const [refused, setRefused] = useState(false);
  useEffect(() => {
    api.config().then(({ authRequired }) => setState(authRequired && !token.get() ? 'ask' : 'ready'), setError);
    whenUnauthorized(() => {
      token.clear();
      setRefused(true);
      setState('ask');
    });
  }, []);

  if (error) return <Problem error={error} />;
  if (state === 'loading') return <p class="muted">Loading…</p>;
  if (state === 'ready') return <>{children}</>;
  return (
    <form
      class="token-form"
      onSubmit={(event) => {
        event.preventDefault();
        const value = new FormData(event.currentTarget).get('token');
        if (typeof value !== 'string' || !value.trim()) return;
        token.set(value.trim());
        setRefused(false);
        // Checked at once with the smallest authenticated read: a refusal (401) brings the form back.
        api.listRuns({}, undefined, 1).then(
          () => setState('ready'),
          (caught: ApiError) => caught.status !== 401 && setError(caught),
        );
      }}
    >
      <h1>Sign in</h1>
      <p>This coordinator requires its client token (CLIENT_TOKEN). It is kept in this browser tab until the tab closes.</p>
      {refused && (
        <p class="problem" role="alert">
          The coordinator refused that token.
        </p>
      )}
      <label>
        Token <input name="token" type="password" autoComplete="current-password" required />
      </label>
      <button type="submit" class="primary">
        Sign in
      </button>
    </form>
  );
}
