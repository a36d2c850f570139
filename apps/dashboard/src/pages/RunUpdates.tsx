import type { JsonValue, RunView, TaskView, UpdateView } from '@nest-durable/common';
import { isTerminalStatus } from '@nest-durable/common/run-status';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Confirm } from '../components/Confirm';
import { Problem } from '../components/Problem';
import { Status } from '../components/Status';
import { Time } from '../components/Time';

/** What an `update` step records: the update's id, its input and the handler's answer (its error is the step's). */
interface UpdateRecord {
  updateId?: string;
  input?: JsonValue;
  output?: JsonValue;
}

/** A JSON value on one line, cut where a table cell would overflow. */
const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
};

/**
 * The updates the run applied (its `update` steps: name, input, answer or error, when), and a form that sends one
 * (POST /v1/runs/:id/updates/:name) after a confirmation, then says the run's answer, that it is still pending, or
 * why it was refused. `onSent` has the page read the run again (its new update step).
 */
export function UpdatesSection({ run, onSent }: { run: RunView; onSent: () => void }) {
  const applied = (run.tasks ?? []).filter((step) => step.kind === 'update');
  const [name, setName] = useState('');
  const [inputText, setInputText] = useState('null');
  const [pending, setPending] = useState<{ name: string; input: JsonValue }>();
  const [answer, setAnswer] = useState<UpdateView>();
  const [error, setError] = useState<Error>();

  const ask = (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setAnswer(undefined);
    if (!name.trim()) return setError(new Error('The update needs a name.'));
    try {
      setPending({ name: name.trim(), input: JSON.parse(inputText || 'null') });
    } catch {
      setError(new Error('The update input is not valid JSON.'));
    }
  };
  const send = async (update: { name: string; input: JsonValue }) => {
    try {
      setAnswer(await api.sendUpdate(run.id, update.name, update.input));
    } catch (caught) {
      setError(caught as Error);
    }
    onSent();
  };

  return (
    <section aria-labelledby="updates-title">
      <h2 id="updates-title">Updates</h2>
      {applied.length === 0 ? <p class="muted">No updates applied.</p> : <UpdatesTable steps={applied} />}
      {!isTerminalStatus(run.status) && (
        <form class="run-form" onSubmit={ask}>
          <label>
            Update name <input value={name} onInput={(event) => setName(event.currentTarget.value)} />
          </label>
          <label>
            Update input (JSON) <textarea rows={1} value={inputText} onInput={(event) => setInputText(event.currentTarget.value)} />
          </label>
          <button type="submit">Send update</button>
        </form>
      )}
      <Problem error={error} />
      {answer && (
        <p role="status" aria-label="Update answer">
          {answer.status === 'completed' ? (
            <>
              Update {answer.name} answered: <code>{short(answer.output)}</code>
            </>
          ) : (
            `Update ${answer.name} is ${answer.status}: the run applies it where it next waits.`
          )}
        </p>
      )}
      {pending && (
        <Confirm
          title="Send this update?"
          confirmLabel="Send"
          onConfirm={() => {
            setPending(undefined);
            void send(pending);
          }}
          onCancel={() => setPending(undefined)}
        >
          <p>
            Run <span class="mono">{run.id}</span> ({run.workflow}@{run.version}) gets update <strong>{pending.name}</strong> with input{' '}
            <code>{short(pending.input)}</code>; its handler answers it where the run waits.
          </p>
        </Confirm>
      )}
    </section>
  );
}

function UpdatesTable({ steps }: { steps: TaskView[] }) {
  return (
    <table aria-label="Applied updates">
      <thead>
        <tr>
          <th scope="col">applied</th>
          <th scope="col">name</th>
          <th scope="col">status</th>
          <th scope="col">input</th>
          <th scope="col">answer</th>
        </tr>
      </thead>
      <tbody>
        {steps.map((step) => {
          const record = (step.output ?? {}) as UpdateRecord;
          return (
            <tr key={step.key}>
              <td>
                <Time at={step.finishedAt ?? step.createdAt} />
              </td>
              <td class="mono">{step.name}</td>
              <td>
                <Status status={step.status} />
              </td>
              <td>
                <code>{short(record.input)}</code>
              </td>
              <td>
                {step.error ? (
                  <span class="step-error">
                    <strong>{step.error.name}</strong>: {step.error.message}
                  </span>
                ) : (
                  <code>{short(record.output)}</code>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
