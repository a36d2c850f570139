import type { WorkflowLimits, WorkflowView } from '@nest-durable/common';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api } from '../api';
import { Confirm } from '../components/Confirm';
import { Notice } from '../components/Notice';
import { Problem } from '../components/Problem';
import { Time } from '../components/Time';
import { useAction } from '../use-action';
import { useLoad } from '../use-load';

type Pending = { kind: 'pause' | 'resume' | 'clear'; workflow: WorkflowView } | { kind: 'limits'; workflow: WorkflowView; limits: WorkflowLimits };

const TITLES = { pause: 'Pause', resume: 'Resume', clear: 'Clear the limits set here for', limits: 'Set the limits of' } as const;
const LIMITS = [
  ['concurrency', 'Concurrency'],
  ['concurrencyPerKey', 'Concurrency per key'],
  ['ratePerSecond', 'Runs per second'],
  ['ratePerKeyPerSecond', 'Runs per second per key'],
] as const;
const RATES: readonly string[] = ['ratePerSecond', 'ratePerKeyPerSecond'];

/** Each limit in force, and where it comes from (set here through the API, or declared in code). */
function limitText(workflow: WorkflowView, field: keyof WorkflowLimits): string {
  const value = workflow.limits[field];
  if (value === null || value === undefined) return '—';
  return `${value} (${workflow.apiLimits[field] !== null ? 'set here' : 'code'})`;
}

/** Flow control of each workflow version: pause and resume, and its limits (GET /v1/workflows and its actions). */
export function Workflows() {
  const workflows = useLoad(() => api.workflows(), []);
  const [pending, setPending] = useState<Pending>();
  const [editing, setEditing] = useState<string>();
  const outcome = useAction(workflows.reload);
  const label = (workflow: WorkflowView) => `${workflow.name}@${workflow.version}`;

  const act = async (action: Pending): Promise<string> => {
    const { name, version } = action.workflow;
    if (action.kind === 'pause') await api.pause(name, version);
    if (action.kind === 'resume') await api.resume(name, version);
    if (action.kind === 'clear') await api.clearLimits(name, version);
    if (action.kind === 'limits') await api.setLimits(name, version, action.limits);
    setEditing(undefined);
    return `${label(action.workflow)}: ${{ pause: 'paused', resume: 'resumed', clear: 'limits cleared', limits: 'limits set' }[action.kind]}.`;
  };

  const askLimits = (workflow: WorkflowView) => (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const limits: WorkflowLimits = {};
    for (const [field] of LIMITS) {
      const text = String(form.get(field) ?? '').trim();
      limits[field] = text === '' ? null : Number(text);
    }
    setPending({ kind: 'limits', workflow, limits });
  };

  const items = workflows.data?.items ?? [];
  return (
    <section aria-labelledby="workflows-title">
      <header class="page-header">
        <h1 id="workflows-title">Workflows</h1>
      </header>
      <Notice message={outcome.message} />
      <Problem error={outcome.error ?? workflows.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">workflow@version</th>
            <th scope="col">state</th>
            {LIMITS.map(([field, name]) => (
              <th scope="col" key={field}>
                {name.toLowerCase()}
              </th>
            ))}
            <th scope="col" class="number">
              running
            </th>
            <th scope="col">changed</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
          {items.map((workflow) => (
            <tr key={label(workflow)} data-workflow={label(workflow)}>
              <th scope="row">
                <Link href={`/runs?workflow=${encodeURIComponent(workflow.name)}&version=${encodeURIComponent(workflow.version)}`}>{label(workflow)}</Link>
              </th>
              <td>
                {workflow.paused ? <strong class="warn">paused</strong> : 'active'}
                {workflow.pausedShards.length > 0 && <span class="muted"> (paused shards: {workflow.pausedShards.join(', ')})</span>}
              </td>
              {LIMITS.map(([field]) => (
                <td key={field}>{limitText(workflow, field)}</td>
              ))}
              <td class="number">{workflow.running}</td>
              <td>
                <Time at={workflow.updatedAt} compact />
              </td>
              <td>
                <div class="buttons">
                  {workflow.paused || workflow.pausedShards.length > 0 ? (
                    <button type="button" aria-label={`Resume ${label(workflow)}`} onClick={() => setPending({ kind: 'resume', workflow })}>
                      Resume
                    </button>
                  ) : (
                    <button type="button" aria-label={`Pause ${label(workflow)}`} onClick={() => setPending({ kind: 'pause', workflow })}>
                      Pause
                    </button>
                  )}
                  <button type="button" aria-label={`Edit the limits of ${label(workflow)}`} onClick={() => setEditing(label(workflow))}>
                    Limits…
                  </button>
                </div>
                {editing === label(workflow) && (
                  <form class="limits" onSubmit={askLimits(workflow)} aria-label={`Limits of ${label(workflow)}`}>
                    {LIMITS.map(([field, name]) => (
                      <label key={field}>
                        {name}{' '}
                        <input
                          name={field}
                          type="number"
                          min={RATES.includes(field) ? 0.001 : 1}
                          step={RATES.includes(field) ? 'any' : 1}
                          size={6}
                          defaultValue={workflow.apiLimits[field] === null ? '' : String(workflow.apiLimits[field])}
                        />
                      </label>
                    ))}
                    <p class="muted">Empty: the limit declared in code applies (if any).</p>
                    <div class="buttons">
                      <button type="submit">Save limits</button>
                      <button type="button" onClick={() => setPending({ kind: 'clear', workflow })}>
                        Clear limits set here
                      </button>
                      <button type="button" onClick={() => setEditing(undefined)}>
                        Close
                      </button>
                    </div>
                  </form>
                )}
              </td>
            </tr>
          ))}
          {items.length === 0 && !workflows.loading && (
            <tr>
              <td colSpan={9} class="muted">
                No workflow version is known yet: workers register theirs when they start.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {pending && (
        <Confirm
          title={`${TITLES[pending.kind]} ${label(pending.workflow)}?`}
          confirmLabel={{ pause: 'Pause', resume: 'Resume', clear: 'Clear', limits: 'Set limits' }[pending.kind]}
          onConfirm={() => {
            setPending(undefined);
            void outcome.perform(() => act(pending));
          }}
          onCancel={() => setPending(undefined)}
        >
          <p>
            {
              {
                pause: 'Its queued runs are not taken until it is resumed; running runs finish; new runs are still accepted.',
                resume: 'All its shards resume; its waiting runs are woken.',
                clear: 'The limits declared in code apply again.',
                limits: 'These replace the limits set here before; each one set wins over the code’s until cleared.',
              }[pending.kind]
            }
          </p>
        </Confirm>
      )}
    </section>
  );
}
