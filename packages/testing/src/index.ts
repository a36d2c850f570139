export { createTestEnvironment, type TestEnvironment, type TestEnvironmentOptions } from './test-environment';
