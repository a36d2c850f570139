import type {
  DeadLetterView,
  ErrorDetails,
  JsonValue,
  RunTransition,
  RunView,
  ScheduleView,
  Stats,
  TaskView,
  WorkerView,
  WorkflowView,
} from '@nest-durable/common';

const VALUE_WIDTH = 100;

/** Columns padded to their widest cell, two spaces apart; headers in capitals. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column])))
      .join('  ')
      .trimEnd();
  return [line(headers.map((header) => header.toUpperCase())), ...rows.map(line)].join('\n');
}

/** A JSON value on one line, cut to a width a terminal shows (`--json` gives it whole). */
export function formatValue(value: JsonValue): string {
  const text = JSON.stringify(value);
  return text.length > VALUE_WIDTH ? `${text.slice(0, VALUE_WIDTH - 1)}…` : text;
}

export function formatError(error: ErrorDetails): string {
  return `${error.name}: ${error.message}${error.reason ? ` (${error.reason})` : ''}`;
}

/** `wf runs get`: the run's fields, then its steps. */
export function formatRun(run: RunView): string {
  const fields: [string, string | null][] = [
    ['run', run.id],
    ['workflow', `${run.workflow} ${run.version}`],
    ['status', run.status],
    ['attempt', String(run.attempt)],
    ['revision', String(run.revision)],
    ['priority', String(run.priority)],
    ['stalls', run.stalls > 0 ? String(run.stalls) : null],
    ['shard', run.shard],
    ['concurrency key', run.concurrencyKey],
    ['paused', run.paused ? 'yes: its workflow version or shard is paused' : null],
    ['parent', run.parentId],
    ['build', run.buildId],
    ['idempotency key', run.idempotencyKey],
    [
      'tags',
      Object.keys(run.tags).length > 0
        ? Object.entries(run.tags)
            .map(([key, value]) => `${key}=${value}`)
            .join(' ')
        : null,
    ],
    ['due', run.status === 'queued' || run.status === 'waiting' ? (run.runAt ?? 'when its wait ends') : null],
    ['created', run.createdAt],
    ['started', run.startedAt],
    ['finished', run.finishedAt],
    ['input', formatValue(run.input)],
    ['output', run.status === 'completed' ? formatValue(run.output) : null],
    ['error', run.error ? formatError(run.error) : null],
  ];
  const lines = [formatFields(fields)];
  if (run.tasks && run.tasks.length > 0) lines.push('', formatSteps(run.tasks));
  return lines.join('\n');
}

/** One `name  value` line per field that has a value, the values aligned. */
function formatFields(fields: [string, string | null][]): string {
  const shown = fields.filter((field): field is [string, string] => field[1] !== null);
  const width = Math.max(...shown.map(([name]) => name.length));
  return shown.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}

function formatSteps(tasks: TaskView[]): string {
  return formatTable(
    ['key', 'kind', 'status', 'attempts', 'recorded', 'result'],
    tasks.map((task) => [task.key, task.kind, task.status, String(task.attempts), task.createdAt, stepResult(task)]),
  );
}

/** `wf runs watch`: a step as it is recorded or resolves. */
export function formatStepLine(task: TaskView): string {
  const result = stepResult(task);
  return `${task.createdAt}  ${task.key} ${task.status}${task.attempts > 1 ? ` after ${task.attempts} attempts` : ''}${result ? `  ${result}` : ''}`;
}

function stepResult(task: TaskView): string {
  if (task.kind === 'patch') return 'takes the patched branch';
  if (task.error) return formatError(task.error);
  return task.status === 'completed' && task.output !== null ? formatValue(task.output) : '';
}

/** One line for a run: its id, workflow and status, with its output or error once it ended. */
export function formatRunLine(run: RunView): string {
  const ending = run.status === 'completed' ? `  ${formatValue(run.output)}` : run.error ? `  ${formatError(run.error)}` : '';
  return `run ${run.id} (${run.workflow} ${run.version}) ${run.status}${ending}`;
}

export function formatRunList(runs: RunView[], nextCursor: string | null): string {
  if (runs.length === 0) return 'no runs';
  const table = formatTable(
    ['id', 'workflow', 'version', 'status', 'attempt', 'created'],
    runs.map((run) => [run.id, run.workflow, run.version, run.status, String(run.attempt), run.createdAt]),
  );
  return nextCursor ? `${table}\nmore: --cursor ${nextCursor}` : table;
}

export function formatDeadLetterList(deadLetters: DeadLetterView[], nextCursor: string | null): string {
  if (deadLetters.length === 0) return 'no dead letters';
  const table = formatTable(
    ['id', 'origin', 'run', 'queue', 'reason', 'created', 'message'],
    // A Streams wake-up that named no run has none.
    deadLetters.map((letter) => [letter.id, letter.origin, letter.runId ?? '-', letter.queue, letter.reason, letter.createdAt, letter.message]),
  );
  return nextCursor ? `${table}\nmore: --cursor ${nextCursor}` : table;
}

/** `wf runs history`: a page of a run's transitions, oldest first. */
export function formatTransitions(transitions: RunTransition[], nextCursor: string | null): string {
  const table = formatTable(
    ['at', 'from', 'to', 'revision', 'worker'],
    transitions.map((transition) => [transition.at, transition.from ?? '-', transition.to, String(transition.revision), transition.workerId ?? '-']),
  );
  return nextCursor ? `${table}\nmore: --after ${nextCursor}` : table;
}

/** `wf stats`: the totals, runs by status, then every queue's depth. */
export function formatStats(stats: Stats): string {
  const total = (field: 'started' | 'finished') => stats.throughput.reduce((sum, minute) => sum + minute[field], 0);
  const outboxAge = stats.outbox.oldestAgeMs === null ? '' : ` (oldest ${formatAge(stats.outbox.oldestAgeMs)})`;
  const lines = [
    `last ${stats.window} as of ${stats.generatedAt}: ${total('started')} runs started, ${total('finished')} finished`,
    `workers online ${stats.workersOnline}, outbox backlog ${stats.outbox.backlog}${outboxAge}, dead letters ${stats.deadLetters}`,
    '',
    stats.runs.length === 0
      ? 'no runs started in the window'
      : formatTable(
          ['workflow', 'version', 'status', 'runs'],
          stats.runs.map((row) => [row.workflow, row.version, row.status, String(row.count)]),
        ),
    '',
    stats.queues.length === 0
      ? 'no queue has unfinished runs'
      : formatTable(
          ['queue', 'ready', 'delayed', 'running', 'waiting', 'oldest ready', 'hosted'],
          stats.queues.map((queue) => [
            queue.queue,
            String(queue.ready),
            String(queue.delayed),
            String(queue.running),
            String(queue.waiting),
            queue.oldestReadyAgeMs === null ? '-' : formatAge(queue.oldestReadyAgeMs),
            queue.hosted ? 'yes' : 'NO',
          ]),
        ),
  ];
  return lines.join('\n');
}

/** A duration for a human: `850ms`, `12s`, `5m`, `3h`, `2d`. */
export function formatAge(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ];
  for (const [unit, size] of units) if (ms >= size) return `${Math.floor(ms / size)}${unit}`;
  return `${Math.floor(ms / 1_000)}s`;
}

export function formatWorkerList(workers: WorkerView[]): string {
  if (workers.length === 0) return 'no workers';
  return formatTable(
    ['id', 'state', 'build', 'subscriber', 'runs', 'last seen', 'workflows'],
    workers.map((worker) => [
      worker.id,
      worker.online ? 'online' : 'offline',
      worker.buildId ?? '-',
      worker.failedOver ? `${worker.subscriber} (failed over to http)` : worker.subscriber,
      `${worker.runsHeld}/${worker.concurrency}`,
      worker.lastSeenAt,
      worker.workflows.map((workflow) => `${workflow.name}@${workflow.version}${workflow.shards.length > 0 ? `[${workflow.shards.join(',')}]` : ''}`).join(' '),
    ]),
  );
}

/** `wf workflows list`: each version's pause and the limits in force (`(api)`: set through the API, over the code's). */
export function formatWorkflowList(workflows: WorkflowView[]): string {
  if (workflows.length === 0) return 'no workflows';
  const limit = (workflow: WorkflowView, field: keyof WorkflowView['limits']) => {
    const value = workflow.limits[field];
    if (value === null) return '-';
    return workflow.apiLimits[field] !== null && workflow.codeLimits[field] !== null ? `${value} (api)` : String(value);
  };
  return formatTable(
    ['workflow', 'version', 'paused', 'running', 'concurrency', 'per key', 'rate/s', 'rate/s per key'],
    workflows.map((workflow) => [
      workflow.name,
      workflow.version,
      workflow.paused ? 'yes' : workflow.pausedShards.length > 0 ? `shards ${workflow.pausedShards.join(',')}` : 'no',
      String(workflow.running),
      limit(workflow, 'concurrency'),
      limit(workflow, 'concurrencyPerKey'),
      limit(workflow, 'ratePerSecond'),
      limit(workflow, 'ratePerKeyPerSecond'),
    ]),
  );
}

/** One line for a version after a change. */
export function formatWorkflowLine(workflow: WorkflowView): string {
  const paused = workflow.paused ? 'paused' : workflow.pausedShards.length > 0 ? `paused in shards ${workflow.pausedShards.join(',')}` : 'not paused';
  const limits = Object.entries(workflow.limits)
    .filter(([, value]) => value !== null)
    .map(([field, value]) => `${field} ${value}`);
  return `workflow ${workflow.name} ${workflow.version}: ${paused}; ${limits.length > 0 ? `limits: ${limits.join(', ')}` : 'no limits'}`;
}

/** When a schedule fires: its cron expression (with its zone) or its interval. */
function scheduleTiming(schedule: ScheduleView): string {
  return schedule.cron !== null ? `cron '${schedule.cron}' ${schedule.timezone}` : `every ${schedule.intervalMs} ms`;
}

/** `wf schedules get|create`: the schedule's fields. */
export function formatSchedule(schedule: ScheduleView): string {
  return formatFields([
    ['schedule', schedule.id],
    ['workflow', `${schedule.workflow} ${schedule.version}`],
    ['declared in code', schedule.name],
    ['fires', scheduleTiming(schedule)],
    ['overlap', schedule.overlap],
    ['catch up', schedule.catchUp],
    ['state', schedule.paused ? 'paused' : 'active'],
    ['next run', schedule.nextRunAt],
    ['last fired', schedule.lastFiredAt],
    ['last run', schedule.lastRunId],
    ['shard', schedule.shard],
    ['input', formatValue(schedule.input)],
  ]);
}

export function formatScheduleList(schedules: ScheduleView[], nextCursor: string | null): string {
  if (schedules.length === 0) return 'no schedules';
  const table = formatTable(
    ['id', 'workflow', 'version', 'fires', 'state', 'next run'],
    schedules.map((s) => [s.id, s.workflow, s.version, scheduleTiming(s), s.paused ? 'paused' : 'active', s.nextRunAt ?? '-']),
  );
  return nextCursor ? `${table}\nmore: --cursor ${nextCursor}` : table;
}
