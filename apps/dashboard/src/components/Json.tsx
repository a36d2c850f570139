import { useMemo, useState } from 'preact/hooks';

/** Characters shown before "Show all": rendering megabytes of text in one node is what freezes a page. */
const PREVIEW_CHARS = 4_000;
/** Beyond this even "Show all" shows a prefix (the whole value stays one click away as a download). */
const SHOWN_MAX_CHARS = 1_000_000;

/**
 * A JSON value in a collapsible section: pretty-printed, truncated to a preview that expands on demand, with a
 * download of the whole value; long text never reaches the DOM at once.
 */
export function Json({ label, value, open = false }: { label: string; value: unknown; open?: boolean }) {
  const [expanded, setExpanded] = useState(false);
  const text = useMemo(() => (value === undefined ? 'undefined' : JSON.stringify(value, null, 2)), [value]);
  const limit = expanded ? SHOWN_MAX_CHARS : PREVIEW_CHARS;
  const shown = text.length > limit ? text.slice(0, limit) : text;
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    const link = Object.assign(document.createElement('a'), { href: url, download: `${label.toLowerCase()}.json` });
    link.click();
    URL.revokeObjectURL(url);
  };
  return (
    <details class="json" open={open}>
      <summary>
        {label} <span class="muted">({text.length.toLocaleString()} characters)</span>
      </summary>
      <pre>{shown}</pre>
      {text.length > shown.length && (
        <p class="muted">
          Showing {shown.length.toLocaleString()} of {text.length.toLocaleString()} characters.{' '}
          {!expanded && (
            <button type="button" onClick={() => setExpanded(true)}>
              Show all
            </button>
          )}{' '}
          <button type="button" onClick={download}>
            Download
          </button>
        </p>
      )}
    </details>
  );
}
