/**
 * Previous and next page of a cursor-paged list: `cursors` are the cursors of the pages before this one
 * (empty on the first), `next` the API's cursor of the page after it (null on the last).
 */
export function Pager({
  label,
  cursors,
  next,
  onChange,
}: {
  label: string;
  cursors: string[];
  next: string | null | undefined;
  onChange: (cursors: string[]) => void;
}) {
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={cursors.length === 0} onClick={() => onChange(cursors.slice(0, -1))}>
        Previous page
      </button>
      <button type="button" disabled={!next} onClick={() => next && onChange([...cursors, next])}>
        Next page
      </button>
    </nav>
  );
}
