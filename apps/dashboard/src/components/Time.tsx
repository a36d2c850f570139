import { absoluteTime, relativeTime } from '../format';

/** A time shown relative ("3 minutes ago") with its absolute value beside it (both, so a screenshot keeps the moment). */
export function Time({ at, compact = false }: { at: string | null | undefined; compact?: boolean }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <time dateTime={at} title={absoluteTime(at)}>
      {relativeTime(at)}
      {!compact && <span class="muted"> · {absoluteTime(at)}</span>}
    </time>
  );
}
