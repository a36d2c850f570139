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
  const [configError, setConfigError] = useState<Error>();
  const [signInError, setSignInError] = useState<Error>();
  const [refused, setRefused] = useState(false);
  useEffect(() => {
    api.config().then(({ authRequired }) => setState(authRequired && !token.get() ? 'ask' : 'ready'), setConfigError);
    whenUnauthorized(() => {
      token.clear();
      setRefused(true);
      setState('ask');
    });
  }, []);

  if (configError) return <Problem error={configError} />;
  if (state === 'loading') return <p class="muted">Loading…</p>;
  if (state === 'ready') return <>{children}</>;
  return (
    <form
      class="token-form"
      onSubmit={(event) => {
        event.preventDefault();
        const value = new FormData(event.currentTarget).get('token');
        if (typeof value !== 'string' || !value.trim()) return;
        const candidate = value.trim();
        setRefused(false);
        setSignInError(undefined);
        // Checked at once, and kept only once accepted: a refusal (401) says so here (through whenUnauthorized),
        // another failure (the network's) is said under the form, which stays to try again.
        api.checkToken(candidate).then(
          () => {
            token.set(candidate);
            setState('ready');
          },
          (caught: ApiError) => caught.status !== 401 && setSignInError(caught),
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
      <Problem error={signInError} />
      <label>
        Token <input name="token" type="password" autoComplete="current-password" required />
      </label>
      <button type="submit" class="primary">
        Sign in
      </button>
    </form>
  );
}
