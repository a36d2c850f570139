import type { ScheduleView } from '@nest-durable/common';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Confirm } from '../components/Confirm';
import { Notice } from '../components/Notice';
import { Problem } from '../components/Problem';
import { RunLink } from '../components/RunLink';
import { Time } from '../components/Time';
import { duration, shortId } from '../format';
import { useAction } from '../use-action';
import { useLoad } from '../use-load';
import { Pager } from '../components/Pager';

type Kind = 'pause' | 'resume' | 'trigger' | 'delete';
type Pending = { kind: Kind; schedule: ScheduleView };

const CONFIRM: Record<Kind, [title: string, button: string, detail: string]> = {
  pause: ['Pause this schedule?', 'Pause', 'It starts no run until resumed.'],
  resume: ['Resume this schedule?', 'Resume', 'Its next fire time is computed from now, with its catch-up policy.'],
  trigger: ['Start a run of this schedule now?', 'Start run', 'One run with its input, besides its timetable.'],
  delete: ['Delete this schedule?', 'Delete', 'It starts no more runs; the runs it started stay.'],
};

const timing = (schedule: ScheduleView) => (schedule.cron ? `${schedule.cron} (${schedule.timezone})` : `every ${duration(schedule.intervalMs ?? 0)}`);

/** Schedules (GET /v1/schedules): their timetable, next and last fire times; pause, resume, start a run now, delete. */
export function Schedules() {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(() => api.schedules(cursor), [cursor]);
  const [pending, setPending] = useState<Pending>();
  const outcome = useAction(page.reload);

  const act = async ({ kind, schedule }: Pending): Promise<string> => {
    if (kind === 'pause') await api.pauseSchedule(schedule.id);
    if (kind === 'resume') await api.resumeSchedule(schedule.id);
    if (kind === 'delete') await api.deleteSchedule(schedule.id);
    if (kind === 'trigger') return `Started run ${(await api.triggerSchedule(schedule.id)).run.id}.`;
    return `Schedule ${schedule.name ?? schedule.id} ${{ pause: 'paused', resume: 'resumed', delete: 'deleted' }[kind]}.`;
  };

  const schedules = page.data?.schedules ?? [];
  const button = (kind: Kind, schedule: ScheduleView, label: string) => (
    <button type="button" aria-label={`${label} schedule ${schedule.name ?? schedule.id}`} onClick={() => setPending({ kind, schedule })}>
      {label}
    </button>
  );
  return (
    <section aria-labelledby="schedules-title">
      <header class="page-header">
        <h1 id="schedules-title">Schedules</h1>
      </header>
      <Notice message={outcome.message} />
      <Problem error={outcome.error ?? page.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">schedule</th>
            <th scope="col">workflow@version</th>
            <th scope="col">when</th>
            <th scope="col">next</th>
            <th scope="col">last fired</th>
            <th scope="col">policies</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((schedule) => (
            <tr key={schedule.id} data-schedule-id={schedule.id}>
              <th scope="row">
                {schedule.name ?? (
                  <span class="mono" title={schedule.id}>
                    {shortId(schedule.id)}
                  </span>
                )}
                {schedule.paused && <strong class="warn"> paused</strong>}
              </th>
              <td>
                {schedule.workflow}@{schedule.version}
              </td>
              <td class="mono">{timing(schedule)}</td>
              <td>
                <Time at={schedule.nextRunAt} compact />
              </td>
              <td>
                <Time at={schedule.lastFiredAt} compact />
                {schedule.lastRunId && (
                  <>
                    {' '}
                    <RunLink id={schedule.lastRunId} />
                  </>
                )}
              </td>
              <td>
                overlap {schedule.overlap}, catch-up {schedule.catchUp}
              </td>
              <td>
                <div class="buttons">
                  {schedule.paused ? button('resume', schedule, 'Resume') : button('pause', schedule, 'Pause')}
                  {button('trigger', schedule, 'Run now')}
                  {button('delete', schedule, 'Delete')}
                </div>
              </td>
            </tr>
          ))}
          {schedules.length === 0 && !page.loading && (
            <tr>
              <td colSpan={7} class="muted">
                No schedules.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <Pager label="Pages of schedules" cursors={cursors} next={page.data?.nextCursor} onChange={setCursors} />
      {pending && (
        <Confirm
          title={CONFIRM[pending.kind][0]}
          confirmLabel={CONFIRM[pending.kind][1]}
          onConfirm={() => {
            setPending(undefined);
            void outcome.perform(() => act(pending));
          }}
          onCancel={() => setPending(undefined)}
        >
          <p>
            {pending.schedule.name ?? pending.schedule.id} ({pending.schedule.workflow}@{pending.schedule.version}): {CONFIRM[pending.kind][2]}
          </p>
        </Confirm>
      )}
    </section>
  );
}
