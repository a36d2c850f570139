import type { JsonValue, RunChange, RunProgress, RunStatus } from '@nest-durable/common';

type Entry = [id: string, workflow: string, version: string, status: RunStatus, revision: number, atMs: number];

/** The changes one `wf_run_changes` notification carries (see the dashboard-feed migration); nothing from a payload it cannot read. */
export function parseRunChanges(payload: string): RunChange[] {
  let entries: unknown;
  try {
    entries = JSON.parse(payload);
  } catch {
    return [];
  }
  if (!Array.isArray(entries)) return [];
  return entries
    .filter((entry): entry is Entry => Array.isArray(entry) && entry.length === 6)
    .map(([id, workflow, version, status, revision, atMs]) => ({ id, workflow, version, status, revision, at: new Date(atMs).toISOString() }));
}

type ProgressEntry = [id: string, workflow: string, version: string, progress: JsonValue, atMs: number];

/** The progress one `wf_run_progress` notification carries (see run-values.sql.ts); nothing from a payload it cannot read. */
export function parseRunProgress(payload: string): RunProgress[] {
  let entry: unknown;
  try {
    entry = JSON.parse(payload);
  } catch {
    return [];
  }
  if (!Array.isArray(entry) || entry.length !== 5) return [];
  const [id, workflow, version, progress, atMs] = entry as ProgressEntry;
  return [{ id, workflow, version, progress, at: new Date(atMs).toISOString() }];
}
