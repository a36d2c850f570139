/** What an action did, said once on the page (a status: screen readers read it without moving focus). */
export function Notice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="notice" role="status">
      {message}
    </p>
  );
}
