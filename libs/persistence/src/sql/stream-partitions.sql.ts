import type { SqlExecutor } from '../database';

/*
 * `engine_settings`: what the deployment's coordinators agree on (the Redis Streams partition count). Every
 * change is made in a transaction that first takes lockEngineSettings, so two coordinators starting at once
 * take turns: the second one reads what the first stored.
 */

const LOCK_ENGINE_SETTINGS = `SELECT pg_advisory_xact_lock(hashtext('wf-engine-settings'))`;

/** Takes the settings' transaction-level advisory lock (released at commit or rollback). */
export async function lockEngineSettings(tx: SqlExecutor): Promise<void> {
  await tx.query(LOCK_ENGINE_SETTINGS);
}

const ENGINE_SETTING = `SELECT value FROM engine_settings WHERE name = $1`;

/** The setting's stored value (JSON), or undefined if none is stored yet. */
export async function engineSetting(tx: SqlExecutor, name: string): Promise<unknown> {
  const [row] = await tx.query<{ value: unknown }>(ENGINE_SETTING, [name]);
  return row?.value;
}

const OTHER_COORDINATORS = `SELECT count(*)::int AS others FROM pg_stat_activity
   WHERE datname = current_database() AND application_name LIKE $1 AND application_name <> $2`;

/**
 * How many sessions of this database belong to other coordinators: their application_name matches `pattern`
 * but is not `self`, this coordinator's own (every coordinator names its sessions `<prefix> <instance>`).
 */
export async function otherCoordinatorSessions(tx: SqlExecutor, pattern: string, self: string): Promise<number> {
  const [{ others }] = await tx.query<{ others: number }>(OTHER_COORDINATORS, [pattern, self]);
  return others;
}

const STORE_INTEGER_SETTING = `INSERT INTO engine_settings (name, value) VALUES ($1, to_jsonb($2::integer))
  ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = now()`;

/** Stores an integer setting (under lockEngineSettings, so no other coordinator changes it meanwhile). */
export async function storeIntegerSetting(tx: SqlExecutor, name: string, value: number): Promise<void> {
  await tx.query(STORE_INTEGER_SETTING, [name, value]);
}
