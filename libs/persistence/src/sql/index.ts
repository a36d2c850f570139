export * from './clock.sql';
export * from './due-times.sql';
export * from './feed.sql';
export * from './stats.sql';
export * from './schedules.sql';
export * from './workers.sql';
export * from './workflow-controls.sql';
export * from './retention.sql';
