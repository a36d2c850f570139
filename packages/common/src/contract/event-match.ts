import { Type } from '@sinclair/typebox';
import { AnyJson, REASON } from './fields';
import { documentProblem, JsonDocument, type JsonValue } from './json-document';

/*
 * Matched events and wait groups (`ctx.waitForEvent(name, { match })`, `ctx.any`, `ctx.all`): the shapes the worker
 * sends and the coordinator evaluates. docs/architecture.md, "Matched events and wait groups".
 */

/** Events sent to a run and not consumed by a wait yet that it keeps at most; one more is refused (409). */
export const PENDING_EVENTS_PER_RUN_MAX = 1000;
/** Fields a `match` compares at most. */
export const MATCH_FIELDS_MAX = 32;

/** A field path of a `match`: names joined by dots (`customer.id`), none empty. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
const MATCH_PATH = /^[^.\u0000-\u001f]+(?:\.[^.\u0000-\u001f]+)*$/;
const MATCH_PATH_MAX_LENGTH = 255;

/** A `match`: each dotted path of the event's data must equal its JSON value (objects and arrays whole). */
export type EventMatch = Record<string, JsonValue>;

/** Why `match` is not one the coordinator evaluates (in a sentence), or undefined when it is. */
export function eventMatchProblem(match: unknown): string | undefined {
  if (typeof match !== 'object' || match === null || Array.isArray(match) || Object.getPrototypeOf(match) !== Object.prototype) {
    return 'match must be a plain object of dotted field paths to JSON values, like { orderId: "o-1", "customer.tier": "gold" }';
  }
  const entries = Object.entries(match);
  if (entries.length === 0 || entries.length > MATCH_FIELDS_MAX) return `match must compare 1 to ${MATCH_FIELDS_MAX} fields (it has ${entries.length})`;
  for (const [path, value] of entries) {
    if (path.length > MATCH_PATH_MAX_LENGTH || !MATCH_PATH.test(path)) {
      return `match field "${path}" must be field names joined by dots (none empty, no control characters, at most ${MATCH_PATH_MAX_LENGTH} characters)`;
    }
    if (!isJson(value)) return `match field "${path}" must be a JSON value (a string, number, boolean, null, array or plain object)`;
  }
  return documentProblem(match, 'match')?.message;
}

function isJson(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJson);
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.values(value).every(isJson);
}

/** The `match` of an event wait, as the coordinator accepts it (see eventMatchProblem for the worker's own check). */
export const EventMatchSchema = JsonDocument(
  'match',
  Type.Record(Type.String({ pattern: MATCH_PATH.source, maxLength: MATCH_PATH_MAX_LENGTH, [REASON]: 'invalid_match' }), AnyJson(), {
    minProperties: 1,
    maxProperties: MATCH_FIELDS_MAX,
    additionalProperties: false,
    description: `an object of 1 to ${MATCH_FIELDS_MAX} field paths (names joined by dots, none empty) to the JSON values they must equal`,
    [REASON]: 'invalid_match',
  }),
  'dotted field paths of the event data, each to the JSON value it must equal',
);
