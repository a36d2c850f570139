import type { RunProgress, RunView } from '@nest-durable/common';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Time } from '../components/Time';
import { useLoad } from '../use-load';

/**
 * The run's last progress (ctx.progress): the newer of what the run view holds and what the live feed brought
 * since it was read (`live`, this run's last `event: progress`), so it moves as the run reports without a re-read.
 */
export function ProgressSection({ run, live }: { run: RunView; live: RunProgress | undefined }) {
  const fromFeed = live !== undefined && (!run.progressAt || Date.parse(live.at) >= Date.parse(run.progressAt));
  const latest = fromFeed ? { value: live.progress, at: live.at } : run.progressAt ? { value: run.progress, at: run.progressAt } : undefined;
  return (
    <section aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      {latest ? (
        <p class="run-progress" role="status" aria-label="Last progress">
          <code>{JSON.stringify(latest.value)}</code> <span class="muted">reported</span> <Time at={latest.at} />
        </p>
      ) : (
        <p class="muted">No progress reported.</p>
      )}
    </section>
  );
}

/**
 * The run's trace id (the OpenTelemetry trace its spans are in) with a copy button, linked to the trace viewer
 * when the coordinator names one (TRACE_URL_TEMPLATE, read from /ui/config.json).
 */
export function TraceId({ traceId }: { traceId: string | undefined }) {
  const config = useLoad(() => api.config(), []);
  const [copied, setCopied] = useState<string>();
  if (!traceId) return <>—</>;
  const template = config.data?.traceUrlTemplate;
  const copy = () =>
    navigator.clipboard.writeText(traceId).then(
      () => setCopied('copied'),
      () => setCopied('could not copy: select the id'),
    );
  return (
    <span class="trace-id">
      {template ? (
        <a class="mono" href={template.replaceAll('{traceId}', encodeURIComponent(traceId))} target="_blank" rel="noreferrer">
          {traceId}
        </a>
      ) : (
        <span class="mono">{traceId}</span>
      )}{' '}
      <button type="button" class="small" onClick={copy} aria-label="Copy the trace id">
        Copy
      </button>
      {copied && (
        <span role="status" class="muted">
          {' '}
          {copied}
        </span>
      )}
    </span>
  );
}
