/** A run's tags as `key=value` (as `wf runs start --tag` takes them), in key order; nothing for a run without tags. */
export function Tags({ tags }: { tags: Record<string, string> }) {
  const entries = Object.entries(tags).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return null;
  return (
    <ul class="tags" aria-label="Tags">
      {entries.map(([key, value]) => (
        <li key={key} class="tag mono">
          {key}={value}
        </li>
      ))}
    </ul>
  );
}
