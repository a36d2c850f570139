import type { RunProgress, RunTransition, RunView } from '@nest-durable/common';
import { isTerminalStatus, RERUN_OF_TAG } from '@nest-durable/common/run-status';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api } from '../api';
import { Json } from '../components/Json';
import { Notice } from '../components/Notice';
import { Problem } from '../components/Problem';
import { Status } from '../components/Status';
import { Tags } from '../components/Tags';
import { Time } from '../components/Time';
import { useLiveRuns } from '../feed';
import { between, duration } from '../format';
import { runningMs } from '../running-time';
import { useAction } from '../use-action';
import { useLoad } from '../use-load';
import { RunActions } from './RunActions';
import { ProgressSection, TraceId } from './RunLive';
import { RunSteps } from './RunSteps';
import { UpdatesSection } from './RunUpdates';
import { ValuesSection } from './RunValues';

export function RunDetail({ id }: { id: string }) {
  const run = useLoad(() => api.getRun(id), [id]);
  const transitions = useLoad(() => api.transitions(id), [id]);
  const values = useLoad(() => api.values(id), [id]);
  /** The run's last progress from the live feed (shown when newer than the run's own). */
  const [liveProgress, setLiveProgress] = useState<RunProgress>();
  const reload = () => {
    run.reload();
    transitions.reload();
    values.reload();
  };
  // A progress comes with the run's other values (the same report), so they are read again with it.
  const onProgress = (progress: RunProgress) => {
    setLiveProgress(progress);
    values.reload();
  };
  useLiveRuns({ runId: id }, reload, run.data ? !isTerminalStatus(run.data.status) : true, onProgress);
  const outcome = useAction(reload);

  if (!run.data) return run.error ? <Problem error={run.error} /> : <p class="muted">Loading…</p>;
  const data = run.data;
  const history = transitions.data?.items ?? [];
  // The worker that last held it (of the transitions listed: a run with more than 1,000 shows its first ones).
  const worker = history.findLast((transition) => transition.workerId)?.workerId;
  return (
    <section aria-labelledby="run-title">
      <header class="page-header">
        <h1 id="run-title">
          Run <span class="mono">{data.id}</span>
        </h1>
        <span class="muted">
          {data.workflow}@{data.version} · attempt {data.attempt}
        </span>
        <Status status={data.status} />
      </header>
      <Problem error={run.error} />
      <Notice message={outcome.message} />
      <RunActions run={data} outcome={outcome} />
      {data.error && (
        <div class="run-error" role="alert" aria-label="Run error">
          <strong>{data.error.name}</strong>: {data.error.message}
          {data.error.reason && <span class="muted"> (reason {data.error.reason})</span>}
        </div>
      )}
      <Facts run={data} worker={worker} ranFor={transitions.data && runningTimeText(data, transitions.data.items, !transitions.data.truncated)} />
      <ProgressSection run={data} live={liveProgress} />
      <ValuesSection runId={data.id} values={values} />
      <UpdatesSection run={data} onSent={reload} />
      <Json label="Input" value={data.input} open />
      <Json label="Output" value={data.output} />
      {data.error && <Json label="Error" value={data.error} />}
      <h2>Steps</h2>
      <RunSteps run={data} />
      <h2>Transitions</h2>
      <Problem error={transitions.error} />
      <Transitions items={history} />
      {transitions.data?.truncated && <p class="muted">The first {history.length.toLocaleString()} transitions are shown; the run has more.</p>}
    </section>
  );
}

/**
 * "Ran for": the time the run spent running, over all its attempts (see runningMs), and how many there were; from its
 * first start to its end is a row of its own, the waits between attempts and its sleeps included.
 */
function runningTimeText(run: RunView, transitions: RunTransition[], complete: boolean): string | undefined {
  if (!run.startedAt) return undefined;
  const attempts = run.attempt > 1 ? `, ${run.attempt} attempts` : '';
  const soFar = isTerminalStatus(run.status) ? '' : ' so far';
  return `${complete ? '' : 'at least '}${duration(runningMs(transitions, { complete }))} running${attempts}${soFar}`;
}

function Facts({ run, worker, ranFor }: { run: RunView; worker: string | null | undefined; ranFor: string | undefined }) {
  const rows: [string, preact.ComponentChildren][] = [
    ['Workflow', `${run.workflow}@${run.version}`],
    ['Status', <Status status={run.status} key="status" />],
    ['Attempt', run.attempt],
    ['Revision', run.revision],
    ['Worker', worker ?? '—'],
    // The build of the worker that executed it last (a claim, take or hand-off records it).
    [
      'Build',
      run.buildId ? (
        <span class="mono" key="build">
          {run.buildId}
        </span>
      ) : (
        '—'
      ),
    ],
    ['Priority', run.priority],
    ['Stalls', run.stalls],
    ['Idempotency key', run.idempotencyKey ?? '—'],
    ['Shard', run.shard ?? '—'],
    ['Trace', <TraceId traceId={run.traceId} key={`trace-${run.id}`} />],
    ['Tags', Object.keys(run.tags).length > 0 ? <Tags tags={run.tags} key="tags" /> : '—'],
    [
      'Parent',
      run.parentId ? (
        <Link href={`/runs/${run.parentId}`} class="mono" key="parent">
          {run.parentId}
        </Link>
      ) : (
        '—'
      ),
    ],
    [
      'Rerun of',
      run.tags[RERUN_OF_TAG] ? (
        <Link href={`/runs/${run.tags[RERUN_OF_TAG]}`} class="mono" key="rerun-of">
          {run.tags[RERUN_OF_TAG]}
        </Link>
      ) : (
        '—'
      ),
    ],
    ['Created', <Time at={run.createdAt} key="c" />],
    ['Started', <Time at={run.startedAt} key="s" />],
    ['Finished', <Time at={run.finishedAt} key="f" />],
    ['Due', <Time at={run.runAt} key="d" />],
    ['Updated', <Time at={run.updatedAt} key="u" />],
    ['Queued for', between(run.createdAt, run.startedAt) ?? '—'],
    ['Ran for', ranFor ?? '—'],
    ['First start to end', between(run.startedAt, run.finishedAt) ?? '—'],
  ];
  return (
    <dl class="facts">
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Transitions({ items }: { items: RunTransition[] }) {
  if (items.length === 0) return <p class="muted">No transitions to show.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">at</th>
          <th scope="col">from</th>
          <th scope="col">to</th>
          <th scope="col" class="number">
            revision
          </th>
          <th scope="col">worker</th>
        </tr>
      </thead>
      <tbody>
        {items.map((transition) => (
          <tr key={`${transition.revision}-${transition.to}-${transition.at}`}>
            <td>
              <Time at={transition.at} />
            </td>
            <td>{transition.from ?? '—'}</td>
            <td>{transition.to}</td>
            <td class="number">{transition.revision}</td>
            <td>{transition.workerId ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
