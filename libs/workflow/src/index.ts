export * from './errors';
export * from './workflow';
export { type CheckedSchedule, checkDeclaredSchedules, DEFAULT_TIMEZONE, ScheduleTimes, type ScheduleTiming } from './schedule-times';
