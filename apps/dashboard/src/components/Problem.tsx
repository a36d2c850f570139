/** An API error or failed load, said in one line (with its machine-readable reason). */
export function Problem({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const reason = (error as { reason?: string }).reason;
  return (
    <p class="problem" role="alert">
      {error.message}
      {reason && <span class="muted"> ({reason})</span>}
    </p>
  );
}
