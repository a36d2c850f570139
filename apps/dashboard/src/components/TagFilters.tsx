import { useState } from 'preact/hooks';

/** `key:value`, as the API takes a tag filter: a key of letters, digits, `.`, `_`, `-`, `/`, then any value. */
const TAG_FILTER = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}:/;

/**
 * The runs page's tag filters: each one shown with a button that removes it, and a field that adds one (`key:value`
 * or `key=value`, as tags are shown). A run must have every tag listed.
 */
export function TagFilters({ tags, onChange }: { tags: string[]; onChange: (tags: string[]) => void }) {
  const [text, setText] = useState('');
  const [invalid, setInvalid] = useState(false);
  const add = (event: Event) => {
    event.preventDefault();
    // `key=value` (how the page shows tags) reads as `key:value`; the key ends at the first separator.
    const tag = text.trim().replace(/^([^:=]*)=/, '$1:');
    if (!TAG_FILTER.test(tag)) return setInvalid(true);
    setInvalid(false);
    setText('');
    if (!tags.includes(tag)) onChange([...tags, tag]);
  };
  return (
    <form class="tag-filters" onSubmit={add}>
      <label>
        Tag{' '}
        <input
          name="tag"
          placeholder="key:value"
          value={text}
          aria-invalid={invalid}
          aria-describedby={invalid ? 'tag-filter-problem' : undefined}
          onInput={(event) => setText(event.currentTarget.value)}
        />
      </label>
      <button type="submit">Add tag filter</button>
      {invalid && (
        <span id="tag-filter-problem" class="warn">
          A tag filter is key:value.
        </span>
      )}
      {tags.length > 0 && (
        <ul class="tags" aria-label="Tag filters">
          {tags.map((tag) => (
            <li key={tag} class="tag mono">
              {tag}{' '}
              <button type="button" class="link" aria-label={`Remove tag filter ${tag}`} onClick={() => onChange(tags.filter((other) => other !== tag))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
    </form>
  );
}
