import { useState } from 'preact/hooks';
import { api, type RunFilter } from '../api';
import { Confirm } from '../components/Confirm';
import { Notice } from '../components/Notice';
import { Problem } from '../components/Problem';

type BulkKind = 'cancel' | 'retry';

const WORDS = {
  cancel: { button: 'Cancel matching runs…', verb: 'Cancel', which: 'unfinished', doing: 'Cancelling', done: 'Cancelled' },
  retry: { button: 'Retry matching runs…', verb: 'Retry', which: 'failed', doing: 'Retrying', done: 'Retried' },
} as const;

/** A count the confirmation shows: the runs that match now, and the bound that keeps runs created later out. */
interface Counted {
  kind: BulkKind;
  matched: number;
  capped: boolean;
  before: string;
}

const runs = (count: number) => `${count.toLocaleString('en')} run${count === 1 ? '' : 's'}`;

/**
 * Cancel or retry every run the runs page's filter matches: the API counts them first (the confirmation says how
 * many), then the page acts on them a request at a time (each up to 500 runs, each run as a single cancel or retry
 * would be), saying how far it got, until none is left. Runs started after the count are left alone.
 */
export function BulkRunActions({ filter, onDone }: { filter: RunFilter; onDone: () => void }) {
  const [counted, setCounted] = useState<Counted>();
  const [progress, setProgress] = useState<string>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const count = async (kind: BulkKind) => {
    setError(undefined);
    setProgress(undefined);
    try {
      const answer = await api.bulk(kind, filter, { dryRun: true });
      if (answer.matched === 0) setProgress(`No ${WORDS[kind].which} runs match this filter.`);
      else setCounted({ kind, matched: answer.matched, capped: answer.capped, before: answer.before! });
    } catch (caught) {
      setError(caught as Error);
    }
  };

  const act = async ({ kind, matched, capped, before: first }: Counted) => {
    const words = WORDS[kind];
    setBusy(true);
    let acted = 0;
    try {
      for (let before: string | null = first; before; ) {
        setProgress(`${words.doing}… ${acted.toLocaleString('en')} of ${capped ? 'at least ' : ''}${matched.toLocaleString('en')} so far.`);
        const page = await api.bulk(kind, filter, { before });
        acted += page.acted;
        before = page.before;
      }
      setProgress(`${words.done} ${runs(acted)}.`);
    } catch (caught) {
      setProgress(`${words.done} ${runs(acted)} before it stopped.`);
      setError(caught as Error);
    } finally {
      setBusy(false);
      onDone();
    }
  };

  return (
    <div class="bulk-actions">
      <fieldset class="buttons">
        <legend class="visually-hidden">Actions on every matching run</legend>
        {(['cancel', 'retry'] as const).map((kind) => (
          <button key={kind} type="button" disabled={busy} onClick={() => void count(kind)}>
            {WORDS[kind].button}
          </button>
        ))}
      </fieldset>
      <Notice message={progress} />
      <Problem error={error} />
      {counted && (
        <Confirm
          title={`${WORDS[counted.kind].verb} ${counted.capped ? 'at least ' : ''}${runs(counted.matched)}?`}
          confirmLabel={`${WORDS[counted.kind].verb} ${runs(counted.matched)}`}
          onConfirm={() => {
            setCounted(undefined);
            void act(counted);
          }}
          onCancel={() => setCounted(undefined)}
        >
          <p>
            Every {WORDS[counted.kind].which} run matching the filter{counted.kind === 'cancel' ? ', with its unfinished children' : ', from its failed step'}.
            Runs started from now on are left alone.
          </p>
        </Confirm>
      )}
    </div>
  );
}
