import type { JsonValue, RunView } from '@nest-durable/common';
import { isTerminalStatus } from '@nest-durable/common/run-status';
import { useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import { api } from '../api';
import { Confirm } from '../components/Confirm';
import { Problem } from '../components/Problem';
import type { ActionOutcome } from '../use-action';

type Action =
  | { kind: 'cancel' }
  | { kind: 'retry' }
  | { kind: 'wake' }
  | { kind: 'event'; name: string; data: JsonValue }
  | { kind: 'rerun'; input: JsonValue };

const TITLES: Record<Action['kind'], string> = {
  cancel: 'Cancel this run and its unfinished children?',
  retry: 'Retry this run from its failed step, as its next attempt?',
  wake: 'End its sleep now?',
  event: 'Send this event?',
  rerun: 'Start a new run with this input?',
};

/** Cancel, retry, wake and send event, each through the API after a confirmation; the run page says the outcome. */
export function RunActions({ run, outcome }: { run: RunView; outcome: ActionOutcome }) {
  const [pending, setPending] = useState<Action>();
  /** Why the event form cannot be sent (no name, data that is not JSON): said here, nothing sent. */
  const [invalid, setInvalid] = useState<Error>();
  const [eventName, setEventName] = useState('');
  const [eventData, setEventData] = useState('null');
  /** The rerun form's input (JSON text), shown once asked for; it starts as the run's own input. */
  const [rerunInput, setRerunInput] = useState<string>();
  const [, navigate] = useLocation();
  const terminal = isTerminalStatus(run.status);
  const sleeping = run.status === 'waiting' && (run.tasks ?? []).some((step) => step.kind === 'sleep' && step.status === 'waiting');

  const act = async (action: Action): Promise<string> => {
    if (action.kind === 'rerun') {
      const started = await api.rerun(run.id, action.input);
      navigate(`/runs/${started.id}`);
      return `Started run ${started.id}, a rerun of ${run.id}.`;
    }
    if (action.kind === 'event') {
      const { delivered } = await api.sendEvent(run.id, action.name, action.data);
      return delivered ? `Event ${action.name} delivered: the run was waiting for it.` : `Event ${action.name} kept for the run's next wait of that name.`;
    }
    await { cancel: api.cancel, retry: api.retry, wake: api.wake }[action.kind](run.id);
    return { cancel: 'Cancelled.', retry: 'Queued again as its next attempt.', wake: 'Woken.' }[action.kind];
  };

  const askEvent = (event: Event) => {
    event.preventDefault();
    setInvalid(undefined);
    // `required` lets a name of spaces through, which the API would only refuse (or misroute, trimmed to nothing).
    if (!eventName.trim()) return setInvalid(new Error('The event needs a name.'));
    try {
      setPending({ kind: 'event', name: eventName.trim(), data: JSON.parse(eventData || 'null') });
    } catch {
      setInvalid(new Error('The event data is not valid JSON.'));
    }
  };

  const askRerun = (event: Event) => {
    event.preventDefault();
    setInvalid(undefined);
    try {
      setPending({ kind: 'rerun', input: JSON.parse(rerunInput || 'null') });
    } catch {
      setInvalid(new Error('The new input is not valid JSON.'));
    }
  };

  return (
    <div class="run-actions">
      <fieldset class="buttons">
        <legend class="visually-hidden">Actions</legend>
        <button type="button" disabled={terminal} onClick={() => setPending({ kind: 'cancel' })}>
          Cancel run
        </button>
        <button type="button" disabled={run.status !== 'failed'} onClick={() => setPending({ kind: 'retry' })}>
          Retry from failed step
        </button>
        <button type="button" disabled={!terminal} onClick={() => setRerunInput(JSON.stringify(run.input, null, 2))}>
          Rerun with new input…
        </button>
        <button type="button" disabled={!sleeping} onClick={() => setPending({ kind: 'wake' })}>
          Wake run
        </button>
      </fieldset>
      {!terminal && (
        <form class="send-event" onSubmit={askEvent}>
          <label>
            Event name <input required value={eventName} onInput={(event) => setEventName(event.currentTarget.value)} />
          </label>
          <label>
            Event data (JSON) <textarea rows={1} value={eventData} onInput={(event) => setEventData(event.currentTarget.value)} />
          </label>
          <button type="submit">Send event</button>
        </form>
      )}
      {terminal && rerunInput !== undefined && (
        <form class="rerun" onSubmit={askRerun}>
          <label>
            New input (JSON) <textarea rows={4} value={rerunInput} onInput={(event) => setRerunInput(event.currentTarget.value)} />
          </label>
          <button type="submit">Start the new run</button>
          <button type="button" onClick={() => setRerunInput(undefined)}>
            Close
          </button>
        </form>
      )}
      <Problem error={invalid ?? outcome.error} />
      {pending && (
        <Confirm
          title={TITLES[pending.kind]}
          confirmLabel={{ cancel: 'Cancel run', retry: 'Retry', wake: 'Wake', event: 'Send', rerun: 'Start run' }[pending.kind]}
          onConfirm={() => {
            setPending(undefined);
            setInvalid(undefined);
            if (pending.kind === 'rerun') setRerunInput(undefined);
            void outcome.perform(() => act(pending));
          }}
          onCancel={() => setPending(undefined)}
        >
          <p>
            Run <span class="mono">{run.id}</span> ({run.workflow}@{run.version})
            {pending.kind === 'rerun' && (
              <>
                {' '}
                runs again as a new run (its version, shard, priority and tags, tagged rerun-of) with input{' '}
                <code>{JSON.stringify(pending.input).slice(0, 200)}</code>
              </>
            )}
            {pending.kind === 'event' && (
              <>
                {' '}
                gets event <strong>{pending.name}</strong> with data <code>{JSON.stringify(pending.data).slice(0, 200)}</code>
              </>
            )}
            .
          </p>
        </Confirm>
      )}
    </div>
  );
}
