import { useEffect } from 'preact/hooks';
import { api } from '../api';
import { Problem } from '../components/Problem';
import { Time } from '../components/Time';
import { useLoad } from '../use-load';

/** Workers register every few seconds: read again as often. */
const REFRESH_MS = 5_000;

export function Workers() {
  const workers = useLoad(() => api.workers(), []);
  useEffect(() => {
    const timer = setInterval(workers.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [workers.reload]);
  const items = workers.data?.items ?? [];
  return (
    <section aria-labelledby="workers-title">
      <header class="page-header">
        <h1 id="workers-title">Workers</h1>
      </header>
      <Problem error={workers.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">worker</th>
            <th scope="col">state</th>
            <th scope="col">build</th>
            <th scope="col">subscriber</th>
            <th scope="col" class="number">
              concurrency
            </th>
            <th scope="col" class="number">
              runs held
            </th>
            <th scope="col">last heartbeat</th>
            <th scope="col">started</th>
            <th scope="col">workflows</th>
          </tr>
        </thead>
        <tbody>
          {items.map((worker) => (
            <tr key={worker.id} class={worker.online ? '' : 'offline'}>
              <th scope="row" class="mono">
                {worker.id}
              </th>
              <td>{worker.online ? 'online' : 'offline'}</td>
              <td class="mono">{worker.buildId ?? '—'}</td>
              <td>
                {worker.subscriber}
                {worker.failedOver && <strong class="warn"> (failed over)</strong>}
              </td>
              <td class="number">{worker.concurrency}</td>
              <td class="number">{worker.runsHeld}</td>
              <td>
                <Time at={worker.lastSeenAt} compact />
              </td>
              <td>
                <Time at={worker.startedAt} compact />
              </td>
              <td>
                <ul class="plain">
                  {worker.workflows.map((workflow) => (
                    <li key={`${workflow.name}@${workflow.version}`}>
                      {workflow.name}@{workflow.version}
                      {workflow.shards.length > 0 && <span class="muted"> shards {workflow.shards.join(', ')}</span>}
                    </li>
                  ))}
                </ul>
              </td>
            </tr>
          ))}
          {items.length === 0 && !workers.loading && (
            <tr>
              <td colSpan={8} class="muted">
                No worker has registered in the last hour.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
