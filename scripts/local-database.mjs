// The embedded PostgreSQL `npm start` runs when DATABASE_URL is not set: where it listens, its one user and
// password, and the database the coordinator uses. README's Quick start shows how to connect with these
// (test/readme-configuration.spec.ts checks that it says what is here); the launcher prints it when it starts.
export const EMBEDDED_DEFAULT_PORT = 5433;
export const EMBEDDED_PORT = Number(process.env.EMBEDDED_PG_PORT ?? EMBEDDED_DEFAULT_PORT);
export const EMBEDDED_USER = 'postgres';
export const EMBEDDED_PASSWORD = 'postgres';
export const EMBEDDED_DATABASE = 'workflows';

/** The embedded server's connection string, for `database` (the coordinator's unless given). */
export function embeddedUrl(database = EMBEDDED_DATABASE, port = EMBEDDED_PORT) {
  return `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${database}`;
}
