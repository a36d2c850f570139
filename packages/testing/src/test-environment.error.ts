import { DurableError } from '@nest-durable/common';

/**
 * The test kit could not do what a test asked: `skip_time_invalid` (a duration that is not one),
 * `skip_time_unsettled` (work due or running did not settle, so time could not move on), `embedded_database_failed`
 * (no DATABASE_URL and the embedded PostgreSQL server did not start). Its message is the line to read in the test's output.
 */
export class TestEnvironmentError extends DurableError {}
