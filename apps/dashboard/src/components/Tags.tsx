/**
 * A run's tags as `key=value` (as `wf runs start --tag` takes them), in key order; nothing for a run without tags.
 * With `onSelect`, each is a button that filters by it (`key:value`).
 */
export function Tags({ tags, onSelect }: { tags: Record<string, string>; onSelect?: (tag: string) => void }) {
  const entries = Object.entries(tags).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return null;
  return (
    <ul class="tags" aria-label="Tags">
      {entries.map(([key, value]) => (
        <li key={key} class="tag mono">
          {onSelect ? (
            <button type="button" class="link" title={`Show only runs tagged ${key}=${value}`} onClick={() => onSelect(`${key}:${value}`)}>
              {key}={value}
            </button>
          ) : (
            `${key}=${value}`
          )}
        </li>
      ))}
    </ul>
  );
}
