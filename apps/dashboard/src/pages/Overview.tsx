import type { Stats } from '@nest-durable/common';
import { RUN_STATUSES } from '@nest-durable/common/run-status';
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api } from '../api';
import { Problem } from '../components/Problem';
import { ThroughputChart } from '../components/ThroughputChart';
import { Time } from '../components/Time';
import { useLiveRuns } from '../feed';
import { duration } from '../format';
import { useLoad } from '../use-load';

/** Counts every run change moves; they are read again on a change, and at least this often for the ages. */
const REFRESH_MS = 10_000;

/** Runs by status per workflow version: one row per version, one column per status. */
function countsByVersion(runs: Stats['runs']) {
  const rows = new Map<string, { workflow: string; version: string; counts: Record<string, number> }>();
  for (const { workflow, version, status, count } of runs) {
    const key = `${workflow}@${version}`;
    const row = rows.get(key) ?? { workflow, version, counts: {} };
    row.counts[status] = (row.counts[status] ?? 0) + count;
    rows.set(key, row);
  }
  return [...rows.values()].sort((a, b) => `${a.workflow}@${a.version}`.localeCompare(`${b.workflow}@${b.version}`));
}

export function Overview() {
  const [window, setWindow] = useState<'1h' | '24h'>('1h');
  const stats = useLoad(() => api.stats(window), [window]);
  useLiveRuns({}, stats.reload);
  useEffect(() => {
    const timer = setInterval(stats.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [stats.reload]);
  const data = stats.data;
  return (
    <section aria-labelledby="overview-title">
      <header class="page-header">
        <h1 id="overview-title">Overview</h1>
        <label>
          Window{' '}
          <select value={window} onChange={(event) => setWindow(event.currentTarget.value as '1h' | '24h')}>
            <option value="1h">last hour</option>
            <option value="24h">last day</option>
          </select>
        </label>
      </header>
      <Problem error={stats.error} />
      {data && (
        <>
          <div class="cards">
            <Card label="Workers online" value={data.workersOnline} link="/workers" />
            <Card label="Dead letters" value={data.deadLetters} link="/dead-letters" warn={data.deadLetters > 0} />
            <Card
              label="Outbox backlog"
              value={data.outbox.backlog}
              detail={data.outbox.oldestAgeMs === null ? 'empty' : `oldest ${duration(data.outbox.oldestAgeMs)}`}
            />
            <Card label="Runs in window" value={data.runs.reduce((sum, row) => sum + row.count, 0)} link="/runs" />
          </div>
          <h2>Started and finished per minute</h2>
          <ThroughputChart throughput={data.throughput} />
          <h2>Runs by status</h2>
          <table>
            <caption class="visually-hidden">Runs created in the window, by workflow version and status</caption>
            <thead>
              <tr>
                <th scope="col">workflow@version</th>
                {RUN_STATUSES.map((status) => (
                  <th scope="col" class="number" key={status}>
                    {status}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {countsByVersion(data.runs).map((row) => (
                <tr key={`${row.workflow}@${row.version}`}>
                  <th scope="row">
                    <Link href={`/runs?workflow=${encodeURIComponent(row.workflow)}&version=${encodeURIComponent(row.version)}`}>
                      {row.workflow}@{row.version}
                    </Link>
                  </th>
                  {RUN_STATUSES.map((status) => (
                    <td class="number" key={status}>
                      {row.counts[status] ?? 0}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Queues</h2>
          <table aria-label="Queue depths">
            <thead>
              <tr>
                <th scope="col">queue</th>
                <th scope="col" class="number">
                  ready
                </th>
                <th scope="col" class="number">
                  delayed
                </th>
                <th scope="col" class="number">
                  running
                </th>
                <th scope="col" class="number">
                  waiting
                </th>
                <th scope="col">oldest ready</th>
                <th scope="col">hosted</th>
              </tr>
            </thead>
            <tbody>
              {data.queues.map((queue) => (
                <tr key={queue.queue} class={queue.hosted ? '' : 'unhosted'}>
                  <th scope="row">
                    {queue.workflow}@{queue.version}
                    {queue.shard && <span class="muted"> shard {queue.shard}</span>}
                  </th>
                  <td class="number">{queue.ready}</td>
                  <td class="number">{queue.delayed}</td>
                  <td class="number">{queue.running}</td>
                  <td class="number">{queue.waiting}</td>
                  <td>{queue.oldestReadyAgeMs === null ? '—' : duration(queue.oldestReadyAgeMs)}</td>
                  <td>{queue.hosted ? 'yes' : <strong class="warn">no live worker hosts it</strong>}</td>
                </tr>
              ))}
              {data.queues.length === 0 && (
                <tr>
                  <td colSpan={7} class="muted">
                    No queue has unfinished runs or a worker online.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <p class="muted">
            As of <Time at={data.generatedAt} />
          </p>
        </>
      )}
    </section>
  );
}

function Card(props: { label: string; value: number; detail?: string; link?: string; warn?: boolean }) {
  const body = (
    <>
      <span class="card-label">{props.label}</span>
      <span class="card-value">{props.value.toLocaleString()}</span>
      {props.detail && <span class="muted">{props.detail}</span>}
    </>
  );
  return (
    <div class={`card${props.warn ? ' warn' : ''}${props.link ? '' : ' plain'}`}>
      {props.link ? (
        <Link href={props.link} class="card-link">
          {body}
        </Link>
      ) : (
        body
      )}
    </div>
  );
}
