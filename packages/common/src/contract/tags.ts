import { type StaticDecode, Type } from '@sinclair/typebox';
import { RECORD_KEY, REASON } from './fields';

/**
 * Run tags: a small map of text a run is started with (`{"tenant": "acme", "env": "prod"}`), shown with
 * the run and filtered on in the run list (`?tag=tenant:acme`). Small by design: they are metadata to
 * find runs by, not a second input.
 */
export const TAGS_MAX = 16;
export const TAG_KEY_MAX_LENGTH = 64;
export const TAG_VALUE_MAX_LENGTH = 255;

/** Letters, digits, '.', '_', '-', '/' (like `app.example.com/team`): no ':', which separates a filter's key from its value. */
const KEY_PATTERN = `[A-Za-z0-9][A-Za-z0-9._/-]{0,${TAG_KEY_MAX_LENGTH - 1}}`;
/** Any text without control characters or lone UTF-16 surrogates (see Key in fields.ts), possibly empty. */
const VALUE_PATTERN = '(?:[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*';

const KEY_RULE = `1-${TAG_KEY_MAX_LENGTH} characters of letters, digits, '.', '_', '-' or '/', starting with a letter or digit`;

export const TagKey = Type.String({ pattern: `^${KEY_PATTERN}$`, description: KEY_RULE, [REASON]: 'invalid_tag_key' });

export const TagValue = Type.String({
  maxLength: TAG_VALUE_MAX_LENGTH,
  pattern: `^${VALUE_PATTERN}$`,
  description: `text of at most ${TAG_VALUE_MAX_LENGTH} characters without control characters or lone UTF-16 surrogates`,
  [REASON]: 'invalid_tag_value',
});

export const Tags = Type.Record(TagKey, TagValue, {
  maxProperties: TAGS_MAX,
  additionalProperties: false,
  description: `an object of at most ${TAGS_MAX} tags, each a key (${KEY_RULE}) with a text value`,
  [REASON]: 'invalid_tags',
  [RECORD_KEY]: TagKey,
});
export type Tags = StaticDecode<typeof Tags>;

const TagFilter = Type.String({
  maxLength: TAG_KEY_MAX_LENGTH + 1 + TAG_VALUE_MAX_LENGTH,
  pattern: `^${KEY_PATTERN}:${VALUE_PATTERN}$`,
  description: 'key:value, a tag the run must have',
  [REASON]: 'invalid_tag',
});

/**
 * `?tag=key:value`, repeatable (every one must match), read as the tags a run must have. Two filters
 * naming one key with different values match no run: `null`.
 */
export const TagFilters = Type.Transform(
  Type.Union([TagFilter, Type.Array(TagFilter, { minItems: 1, maxItems: TAGS_MAX })], {
    description: `key:value, repeatable up to ${TAGS_MAX} times (every one must match)`,
    [REASON]: 'invalid_tag',
  }),
)
  .Decode((filters): Tags | null => {
    const wanted: Tags = {};
    for (const filter of Array.isArray(filters) ? filters : [filters]) {
      const split = filter.indexOf(':');
      const [key, value] = [filter.slice(0, split), filter.slice(split + 1)];
      if (Object.hasOwn(wanted, key) && wanted[key] !== value) return null;
      wanted[key] = value;
    }
    return wanted;
  })
  .Encode((wanted) => tagFilters(wanted ?? {}));

/** The query values that ask for runs with all of `tags` (what `TagFilters` reads back). */
export function tagFilters(tags: Tags): string[] {
  return Object.entries(tags).map(([key, value]) => `${key}:${value}`);
}
