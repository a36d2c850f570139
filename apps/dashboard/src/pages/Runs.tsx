import type { RunView, WorkerList } from '@nest-durable/common';
import { RUN_STATUSES } from '@nest-durable/common/run-status';
import { useState } from 'preact/hooks';
import { useLocation, useSearch } from 'wouter-preact';
import { ApiError, api, type RunFilter } from '../api';
import { Problem } from '../components/Problem';
import { RunLink } from '../components/RunLink';
import { Status } from '../components/Status';
import { Tags } from '../components/Tags';
import { Time } from '../components/Time';
import { useLiveRuns } from '../feed';
import { between } from '../format';
import { useLoad } from '../use-load';
import { Pager } from '../components/Pager';
import { TagFilters } from '../components/TagFilters';
import { BulkRunActions } from './BulkRunActions';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RANGES = { '': 'any time', '15m': 'last 15 minutes', '1h': 'last hour', '24h': 'last day', '7d': 'last 7 days', custom: 'between…' } as const;
const RANGE_MS: Record<string, number> = { '15m': 900_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 };

/**
 * A `datetime-local` value (the browser's zone) as ISO 8601, or undefined when empty or not a time (the address
 * can say anything: a bound it cannot read is left out, not thrown on).
 */
function isoOf(local: string | undefined): string | undefined {
  const time = local ? new Date(local).getTime() : Number.NaN;
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/** The address's time range if it is one of RANGES, else '' (any time). */
const knownRange = (range: string | undefined): keyof typeof RANGES => (range && Object.hasOwn(RANGES, range) ? (range as keyof typeof RANGES) : '');

/** The API's filter for the page's; a preset time range ends now, at each (re)load; `between…` is `from` to `to`. */
function toQuery(filters: Record<string, string>): RunFilter {
  const range = knownRange(filters.range);
  const custom = range === 'custom';
  return {
    workflow: filters.workflow,
    version: filters.version,
    status: filters.status,
    idempotencyKey: filters.key,
    createdAfter: custom ? isoOf(filters.from) : range ? new Date(Date.now() - RANGE_MS[range]).toISOString() : undefined,
    createdBefore: custom ? isoOf(filters.to) : undefined,
    tag: tagsOf(filters),
  };
}

/** The address's tag filters (`key:value` each; kept as one value, a line each: a tag's value has no line breaks). */
const tagsOf = (filters: Record<string, string>): string[] | undefined => (filters.tag ? filters.tag.split('\n') : undefined);

/**
 * The filters live in the address (so they survive a reload and can be linked to, as the overview does), and so
 * does the page's `cursor`: the top bar's plain /runs is the first page. `state` goes with the history entry.
 */
function useFilters(): [Record<string, string>, (next: Record<string, string>, state?: PagesBefore) => void] {
  const search = useSearch();
  const [, navigate] = useLocation();
  const current = readFilters(search);
  const set = (next: Record<string, string>, state?: PagesBefore) => {
    const params = new URLSearchParams(Object.entries(next).filter(([name, value]) => value !== '' && name !== 'tag'));
    // Tags as the API takes them: `tag=key:value`, once per tag.
    for (const tag of tagsOf(next) ?? []) params.append('tag', tag);
    navigate(`/runs${params.size ? `?${params}` : ''}`, { replace: true, state });
  };
  return [current, set];
}

/** The address's filters, its repeated `tag` as one value (see tagsOf). */
function readFilters(search: string): Record<string, string> {
  const params = new URLSearchParams(search);
  const filters = Object.fromEntries(params);
  const tags = params.getAll('tag');
  if (tags.length > 0) filters.tag = tags.join('\n');
  return filters;
}

/** What "Previous page" needs: the cursors of the pages up to this one, kept in the history entry's state. */
interface PagesBefore {
  cursors: string[];
}

/** The cursors up to the address's `cursor` (the Pager's list); a linked page without its history goes back to the first. */
function cursorsTo(cursor: string | undefined): string[] {
  if (!cursor) return [];
  const kept = (history.state as Partial<PagesBefore> | null)?.cursors;
  return Array.isArray(kept) && kept.at(-1) === cursor ? kept : [cursor];
}

export function Runs() {
  const [filters, setFilters] = useFilters();
  const [, navigate] = useLocation();
  const [search, setSearch] = useState(filters.key ?? '');
  const cursors = cursorsTo(filters.cursor);
  const cursor = cursors.at(-1);
  const setCursors = (next: string[]) => setFilters({ ...filters, cursor: next.at(-1) ?? '' }, { cursors: next });
  const page = useLoad(() => api.listRuns(toQuery(filters), cursor), [JSON.stringify(filters), cursor]);
  // What the online workers host: a queued run of a version none hosts is flagged (it will not start by itself).
  const workers = useLoad(() => api.workers().catch(() => undefined), [page.data]);
  const hosted = workers.data && hostedVersions(workers.data);
  // Live on the first page only: a later page keeps still while it is read.
  useLiveRuns({ workflow: filters.workflow }, page.reload, cursor === undefined);

  const change = (name: string, value: string) => {
    // From the address as it is now: two changes in one event (Enter fires `change`, then `submit`) keep both.
    // Other filters start again from the first page.
    setFilters({ ...readFilters(window.location.search), cursor: '', [name]: value });
  };
  const onSearch = async (event: Event) => {
    event.preventDefault();
    const text = search.trim();
    if (UUID.test(text) && (await isRunId(text.toLowerCase()))) navigate(`/runs/${text.toLowerCase()}`);
    else change('key', text);
  };

  return (
    <section aria-labelledby="runs-title">
      <header class="page-header">
        <h1 id="runs-title">Runs</h1>
      </header>
      <search>
        <form class="filters" onSubmit={onSearch}>
          <label>
            Workflow <input name="workflow" value={filters.workflow ?? ''} onChange={(event) => change('workflow', event.currentTarget.value.trim())} />
          </label>
          <label>
            Version <input name="version" size={8} value={filters.version ?? ''} onChange={(event) => change('version', event.currentTarget.value.trim())} />
          </label>
          <label>
            Status{' '}
            <select name="status" value={filters.status ?? ''} onChange={(event) => change('status', event.currentTarget.value)}>
              <option value="">any</option>
              {RUN_STATUSES.map((status) => (
                <option key={status} value={status}>
                  {status}
                </option>
              ))}
            </select>
          </label>
          <label>
            Created{' '}
            <select name="range" value={knownRange(filters.range)} onChange={(event) => change('range', event.currentTarget.value)}>
              {Object.entries(RANGES).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          {filters.range === 'custom' && (
            <>
              <label>
                From <input type="datetime-local" step={1} value={filters.from ?? ''} onChange={(event) => change('from', event.currentTarget.value)} />
              </label>
              <label>
                To <input type="datetime-local" step={1} value={filters.to ?? ''} onChange={(event) => change('to', event.currentTarget.value)} />
              </label>
            </>
          )}
          <label>
            Run id or idempotency key <input name="search" type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
          </label>
          <button type="submit">Search</button>
        </form>
      </search>
      <TagFilters tags={tagsOf(filters) ?? []} onChange={(tags) => change('tag', tags.join('\n'))} />
      {filters.key && !filters.workflow && <p class="muted">An idempotency key belongs to one workflow: choose the workflow to search by key.</p>}
      <BulkRunActions filter={toQuery(filters)} onDone={page.reload} />
      <Problem error={page.error} />
      <RunTable
        runs={page.data?.runs ?? []}
        loading={page.loading && !page.data}
        hosted={hosted}
        onTag={(tag) => change('tag', [...new Set([...(tagsOf(filters) ?? []), tag])].join('\n'))}
      />
      <Pager label="Pages of runs" cursors={cursors} next={page.data?.nextCursor} onChange={setCursors} />
    </section>
  );
}

/**
 * Whether a UUID typed in the search is a run's id; false only when no run has it (an idempotency key can look
 * like a UUID too: it is searched as one then). Any other failure opens the run's page, which says it.
 */
const isRunId = (id: string) =>
  api.getRun(id).then(
    () => true,
    (error: unknown) => !(error instanceof ApiError && error.status === 404),
  );

/** `workflow@version` of every version an online worker hosts. */
function hostedVersions({ items }: WorkerList): Set<string> {
  return new Set(items.filter((worker) => worker.online).flatMap((worker) => worker.workflows.map((workflow) => `${workflow.name}@${workflow.version}`)));
}

function RunTable({ runs, loading, hosted, onTag }: { runs: RunView[]; loading: boolean; hosted: Set<string> | undefined; onTag: (tag: string) => void }) {
  return (
    <table class="runs">
      <thead>
        <tr>
          <th scope="col">run</th>
          <th scope="col">workflow@version</th>
          <th scope="col">status</th>
          <th scope="col" class="number">
            attempt
          </th>
          <th scope="col">created</th>
          <th scope="col" title="from its first start to its end: the waits between attempts, sleeps and event waits included (its page says how long it ran)">
            first start to end
          </th>
          <th scope="col">idempotency key</th>
          <th scope="col">tags</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.id} data-run-id={run.id}>
            <td>
              <RunLink id={run.id} />
            </td>
            <td>
              {run.workflow}@{run.version}
            </td>
            <td>
              <Status status={run.status} />
              {hosted && run.status === 'queued' && !hosted.has(`${run.workflow}@${run.version}`) && <strong class="warn"> no live worker hosts it</strong>}
            </td>
            <td class="number">{run.attempt}</td>
            <td>
              <Time at={run.createdAt} compact />
            </td>
            <td>{between(run.startedAt, run.finishedAt) ?? '—'}</td>
            <td class="mono">{run.idempotencyKey ?? ''}</td>
            <td>
              <Tags tags={run.tags} onSelect={onTag} />
            </td>
          </tr>
        ))}
        {runs.length === 0 && (
          <tr>
            <td colSpan={8} class="muted">
              {loading ? 'Loading…' : 'No runs match.'}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}
