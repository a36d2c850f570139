import { Link } from 'wouter-preact';
import { shortId } from '../format';

/** A link to a run's page, labelled with its short id; the full id is its title (a tooltip). */
export function RunLink({ id }: { id: string }) {
  return (
    <Link href={`/runs/${id}`} title={id} class="mono">
      {shortId(id)}
    </Link>
  );
}
