// The coordinator as @nest-durable/testing boots it inside a test's process (alias @app/coordinator): the test kit
// is the one published package that ships the coordinator, compiled into its dist.
export { createCoordinatorApp, listenCoordinator } from '../bootstrap';
export { type CoordinatorConfig, loadCoordinatorConfig } from '../config/coordinator.config';
export { DueTimers } from '../timers/due-timers.service';
