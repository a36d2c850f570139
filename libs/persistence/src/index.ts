export * from './database';
export * from './connection-loss';
export * from './entities/run.entity';
export * from './entities/task.entity';
export * from './ids';
export * from './persistence.module';
export * from './sql';
export { sessionExecutor } from './session-executor';
