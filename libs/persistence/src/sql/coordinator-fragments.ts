/*
 * Fragments the coordinator's own statements still embed (runs.repository's run columns, workflow-controls'
 * outbox condition), until those statements move here written out whole as the run store's are. Nothing in this
 * folder uses them.
 */

/** Columns of `runs` under RunEntity's property names, for statements that return whole runs. */
export const RUN_COLUMNS = `id, workflow, version, queue, shard, status, revision, attempt, priority, stalls, input, output, error,
  idempotency_key AS "idempotencyKey", concurrency_key AS "concurrencyKey", tags, parent_id AS "parentId", due_at AS "dueAt", claimed_by AS "claimedBy",
  heartbeat_at AS "heartbeatAt", created_at AS "createdAt", updated_at AS "updatedAt", started_at AS "startedAt",
  finished_at AS "finishedAt"`;

/**
 * True when this session's coordinator publishes to a transport (its `wf.dispatch` setting, see
 * PersistenceModule): outbox rows are written only then, as the enqueue trigger does.
 */
export const DISPATCHING = `coalesce(current_setting('wf.dispatch', true), 'none') NOT IN ('', 'none')`;
