import { compileInputCheck, type InputCheck, InvalidRequestError, type RegisteredWorkflow, type StartWarning } from '@nest-durable/common';
import type { InputSchemaRow } from '@app/persistence';
import { Logger } from '@nestjs/common';

/**
 * How long this coordinator trusts what it read of a version's registration before reading it again: a schema a
 * worker registers at another coordinator (or a version first registered there) is checked here within this time
 * (and the time of a read). Registrations made at this coordinator apply here at once.
 */
export const INPUT_SCHEMAS_FRESH_MS = 5_000;

/** The most workflow versions remembered, the least recently read forgotten first (names no worker registered count too). */
export const INPUT_SCHEMAS_KNOWN_MAX = 10_000;

/** A workflow version as this coordinator knows it from the registry. */
interface KnownVersion {
  /** Some worker registered it (it has a row in `workflows`). */
  registered: boolean;
  /** Its schema's JSON with sorted keys (to see it changed whatever the key order), and its compiled check; none: any input. */
  schema?: string;
  check?: InputCheck;
  readAt: number;
}

interface Version {
  workflow: string;
  version: string;
}

/** One start to check: its version and input. */
export interface InputToCheck extends Version {
  input: unknown;
}

const keyOf = ({ workflow, version }: Version) => `${workflow}\u0000${version}`;

/** JSON with every object's keys sorted: one text per schema, as a worker sends it or as jsonb gives it back. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/**
 * The input check of starts (`POST /v1/runs`, its batch, schedules created through the API), from a cache of the
 * workflow versions the registry knows and their input schemas. A start adds no database round trip: a version
 * this coordinator has not read yet is read once (one query for all of a batch's, shared by concurrent starts);
 * one read longer than INPUT_SCHEMAS_FRESH_MS ago is used as it is and read again behind the start, unless it would
 * refuse the start or warn of it: then it is read again first (a cold path). Each
 * schema's check is compiled once (TypeBox's TypeCompiler), again only when the schema changes.
 */
export class InputSchemas {
  private readonly logger = new Logger(InputSchemas.name);
  /** In the order they were read: the first is the one forgotten when there are too many. */
  private readonly known = new Map<string, KnownVersion>();
  /** Reads under way, by version: starts of a version being read wait for that read. */
  private readonly reading = new Map<string, Promise<KnownVersion>>();

  constructor(
    private readonly readRows: (versions: Version[]) => Promise<InputSchemaRow[]>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Refuses the first start whose input does not match its version's schema (InvalidRequestError `invalid_input`,
   * its message `<where(index)>input/<path>: <expected>`), and answers each start's warning: a version no worker
   * has registered is started all the same, with `unregistered_workflow_version`.
   */
  async check(starts: readonly InputToCheck[], where: (index: number) => string = () => ''): Promise<(StartWarning | undefined)[]> {
    const versions = new Map<string, KnownVersion>();
    const unknown: Version[] = [];
    const stale: Version[] = [];
    const seen = new Set<string>();
    for (const start of starts) {
      const key = keyOf(start);
      if (seen.has(key)) continue;
      seen.add(key);
      const known = this.known.get(key);
      if (!known) unknown.push({ workflow: start.workflow, version: start.version });
      else {
        versions.set(key, known);
        if (this.now() - known.readAt > INPUT_SCHEMAS_FRESH_MS) stale.push(start);
      }
    }
    if (unknown.length > 0) for (const [index, read] of (await this.read(unknown)).entries()) versions.set(keyOf(unknown[index]), read);
    // A stale answer that would refuse a start or warn of it is read again first: a refusal is final for a client
    // (a 400 is not retried), and the schema may have changed since. One that lets a start through is used as it is
    // and read again behind the starts, so the usual start waits for no query.
    const doubted = stale.filter((version) =>
      starts.some((start) => keyOf(start) === keyOf(version) && answerOf(versions.get(keyOf(version))!, start) !== undefined),
    );
    if (doubted.length > 0) for (const [index, read] of (await this.read(doubted)).entries()) versions.set(keyOf(doubted[index]), read);
    const rest = stale.filter((version) => !doubted.includes(version));
    if (rest.length > 0) this.read(rest).catch((error: unknown) => this.keepAfterFailedRead(rest, error));
    return starts.map((start, index) => {
      const answer = answerOf(versions.get(keyOf(start))!, start);
      if (answer instanceof Mismatch) throw new InvalidRequestError('invalid_input', `${where(index)}${answer.text}`);
      return answer;
    });
  }

  /** What a registration at this coordinator recorded (after its commit): it applies to this coordinator's starts at once. */
  registered(workflows: readonly RegisteredWorkflow[]): void {
    for (const { name: workflow, version, inputSchema } of workflows) this.remember({ workflow, version, inputSchema: inputSchema ?? null });
  }

  /**
   * A read behind the starts failed (the database is down, say): what was known is trusted for another window, so
   * the starts that follow do not each try again (and log it) while the database is away.
   */
  private keepAfterFailedRead(versions: Version[], error: unknown): void {
    for (const version of versions) {
      const known = this.known.get(keyOf(version));
      if (known) known.readAt = this.now();
    }
    this.logger.warn(`reading input schemas again failed (the ones read before are used for another ${INPUT_SCHEMAS_FRESH_MS} ms): ${String(error)}`);
  }

  /** Reads these versions (one query), each once however many starts wait for it. */
  private read(versions: Version[]): Promise<KnownVersion[]> {
    const missing = versions.filter((version) => !this.reading.has(keyOf(version)));
    if (missing.length > 0) {
      const startedAt = this.now();
      const rows = this.readRows(missing).then((found) => new Map(found.map((row) => [keyOf(row), row])));
      for (const version of missing) {
        const key = keyOf(version);
        const read = rows.then((found) => this.remember(found.get(key) ?? { ...version, inputSchema: undefined }, startedAt));
        this.reading.set(key, read);
        const done = () => {
          if (this.reading.get(key) === read) this.reading.delete(key);
        };
        read.then(done, done);
      }
    }
    return Promise.all(versions.map((version) => this.reading.get(keyOf(version))!));
  }

  /**
   * Records a version as read now: `inputSchema` undefined when it has no row (never registered), null when it
   * declares none. A read begun (`readSince`) before what is known was learnt (a registration here meanwhile) is older
   * than it: it is dropped.
   */
  private remember(row: Version & { inputSchema: InputSchemaRow['inputSchema'] | undefined }, readSince = Number.POSITIVE_INFINITY): KnownVersion {
    const key = keyOf(row);
    const previous = this.known.get(key);
    if (previous && previous.readAt >= readSince) return previous;
    const schema = row.inputSchema ? canonicalJson(row.inputSchema) : undefined;
    const known: KnownVersion = { registered: row.inputSchema !== undefined, schema, readAt: this.now() };
    if (schema !== undefined) known.check = schema === previous?.schema ? previous.check : this.compile(row, row.inputSchema);
    this.known.delete(key);
    this.known.set(key, known);
    if (this.known.size > INPUT_SCHEMAS_KNOWN_MAX) this.known.delete(this.known.keys().next().value!);
    return known;
  }

  private compile({ workflow, version }: Version, schema: unknown): InputCheck | undefined {
    try {
      return compileInputCheck(schema);
    } catch (error) {
      // Registered by a coordinator that reads more of JSON Schema than this one (a rolling upgrade): not checked here.
      this.logger.warn(
        `the input schema of ${workflow} ${version} is not one this coordinator can check; its inputs are not checked here: ${(error as Error).message}`,
      );
      return undefined;
    }
  }
}

/** A start's input's first mismatch with its version's schema. */
class Mismatch {
  constructor(readonly text: string) {}
}

/** What a start is answered by what is known of its version: refused (a Mismatch), warned of, or nothing to say. */
function answerOf(known: KnownVersion, start: InputToCheck): Mismatch | StartWarning | undefined {
  const mismatch = known.check?.firstMismatch(start.input);
  if (mismatch) return new Mismatch(mismatch);
  return known.registered ? undefined : unregistered(start);
}

function unregistered({ workflow, version }: Version): StartWarning {
  return {
    reason: 'unregistered_workflow_version',
    message: `no worker has registered ${workflow} ${version}: the run waits until a worker that hosts it comes (is the name or the version misspelled?)`,
  };
}
