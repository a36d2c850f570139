/** A run's or step's status as a coloured badge (the colour is never the only signal: the word is there). */
export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}
