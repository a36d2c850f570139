import type { QueryAnswer, RunValues } from '@nest-durable/common';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Json } from '../components/Json';
import { Problem } from '../components/Problem';
import { Time } from '../components/Time';
import type { Loaded } from '../use-load';

/** How much of a value the table shows (the whole one is a query away, in the box below it). */
const CELL_CHARS = 200;

/**
 * The values the run exposed (ctx.expose, its query handlers' answers), a row each, and a box that queries one
 * name, as `GET /v1/runs/:id/queries/:name` answers it: an exposed value, or else the run's last task of that name.
 */
export function ValuesSection({ runId, values }: { runId: string; values: Loaded<RunValues> }) {
  const [name, setName] = useState('');
  const [answer, setAnswer] = useState<QueryAnswer>();
  const [error, setError] = useState<Error>();
  const ask = async (event: Event) => {
    event.preventDefault();
    setAnswer(undefined);
    setError(undefined);
    if (!name.trim()) return setError(new Error('Type the name to query.'));
    try {
      setAnswer(await api.query(runId, name.trim()));
    } catch (caught) {
      setError(caught as Error);
    }
  };
  const rows = values.data?.values ?? [];
  return (
    <section aria-labelledby="values-title">
      <h2 id="values-title">Queries</h2>
      <Problem error={values.error} />
      {rows.length === 0 ? (
        <p class="muted">No values exposed.</p>
      ) : (
        <table aria-label="Exposed values">
          <thead>
            <tr>
              <th scope="col">name</th>
              <th scope="col">value</th>
              <th scope="col">updated</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => {
              const text = JSON.stringify(row.value);
              return (
                <tr key={row.name}>
                  <td class="mono">{row.name}</td>
                  <td>
                    <code>{text.length > CELL_CHARS ? `${text.slice(0, CELL_CHARS)}…` : text}</code>
                  </td>
                  <td>
                    <Time at={row.updatedAt} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <form class="run-form" onSubmit={ask}>
        <label>
          Query name <input value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <button type="submit">Query</button>
      </form>
      <Problem error={error} />
      {answer && (
        <section aria-label="Query answer">
          <p class="muted">
            {answer.source === 'value' ? 'Exposed value' : 'Output of its last task of that name'} {answer.name}, recorded <Time at={answer.updatedAt} />
          </p>
          <Json label={answer.name} value={answer.value} open />
        </section>
      )}
    </section>
  );
}
