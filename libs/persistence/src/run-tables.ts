/**
 * The tables that hold a run's rows, keyed by its id: the run itself, its steps, transitions, events, updates and
 * values. They go together: delete_runs() deletes a run's rows in each (no foreign key does it for them:
 * 1767400000000-history-without-foreign-keys), and they are the tables to partition by run id together. A test
 * that empties `runs` empties them all.
 */
export const RUN_TABLES = ['runs', 'tasks', 'run_transitions', 'run_events', 'run_updates', 'run_values'] as const;
