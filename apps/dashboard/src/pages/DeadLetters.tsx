import type { DeadLetterView } from '@nest-durable/common';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Confirm } from '../components/Confirm';
import { Json } from '../components/Json';
import { Notice } from '../components/Notice';
import { Problem } from '../components/Problem';
import { RunLink } from '../components/RunLink';
import { Time } from '../components/Time';
import { useAction } from '../use-action';
import { useLoad } from '../use-load';
import { Pager } from '../components/Pager';

type Pending = { kind: 'redrive' | 'delete'; letter: DeadLetterView };

export function DeadLetters() {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(() => api.deadLetters(cursor), [cursor]);
  const [pending, setPending] = useState<Pending>();
  const outcome = useAction(page.reload);

  const act = async ({ kind, letter }: Pending): Promise<string> => {
    if (kind === 'delete') {
      await api.deleteDeadLetter(letter.id);
      return `Dead letter ${letter.id} deleted.`;
    }
    const result = await api.redrive(letter.id);
    return `Dead letter ${letter.id} redriven: ${result.action}; its run is ${result.runStatus}.`;
  };

  const letters = page.data?.deadLetters ?? [];
  return (
    <section aria-labelledby="dead-letters-title">
      <header class="page-header">
        <h1 id="dead-letters-title">Dead letters</h1>
      </header>
      <Notice message={outcome.message} />
      <Problem error={outcome.error ?? page.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">id</th>
            <th scope="col">when</th>
            <th scope="col">origin</th>
            <th scope="col">queue</th>
            <th scope="col">run</th>
            <th scope="col">reason</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
          {letters.map((letter) => (
            <tr key={letter.id}>
              <th scope="row">{letter.id}</th>
              <td>
                <Time at={letter.createdAt} compact />
              </td>
              <td>{letter.origin}</td>
              <td class="mono">{letter.queue}</td>
              <td>{letter.runId ? <RunLink id={letter.runId} /> : '—'}</td>
              <td>
                {letter.reason}: {letter.message}
                <Json label="Detail" value={letter.detail} />
              </td>
              <td class="buttons">
                <button type="button" aria-label={`Redrive dead letter ${letter.id}`} onClick={() => setPending({ kind: 'redrive', letter })}>
                  Redrive
                </button>
                <button type="button" aria-label={`Delete dead letter ${letter.id}`} onClick={() => setPending({ kind: 'delete', letter })}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
          {letters.length === 0 && !page.loading && (
            <tr>
              <td colSpan={7} class="muted">
                No dead letters.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <Pager label="Pages of dead letters" cursors={cursors} next={page.data?.nextCursor} onChange={setCursors} />
      {pending && (
        <Confirm
          title={pending.kind === 'redrive' ? 'Redrive this dead letter?' : 'Delete this dead letter?'}
          confirmLabel={pending.kind === 'redrive' ? 'Redrive' : 'Delete'}
          onConfirm={() => {
            setPending(undefined);
            void outcome.perform(() => act(pending));
          }}
          onCancel={() => setPending(undefined)}
        >
          <p>
            {pending.kind === 'redrive'
              ? 'Its run is put back in motion (a new attempt, or a new wake-up) and the dead letter removed.'
              : 'The dead letter is removed; its run is left as it is.'}
          </p>
        </Confirm>
      )}
    </section>
  );
}
