import type { Type } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { UnknownElementException } from '@nestjs/core/errors/exceptions/unknown-element.exception';
import { WorkerSetupError } from '../worker-setup.error';

/**
 * The app's instance of `token`, wherever the app provides it, or undefined when it provides none. The operations
 * module sits beside WorkflowWorkerModule in the user's module, not inside it, so the worker's providers are not
 * injectable there (unless the user made the worker module global): it looks them up in the whole app instead,
 * once every module's providers exist (from onModuleInit on).
 */
export function providedInApp<T>(moduleRef: ModuleRef, token: Type<T> | symbol): T | undefined {
  try {
    return moduleRef.get<T>(token, { strict: false });
  } catch (error) {
    if (error instanceof UnknownElementException) return undefined;
    throw error;
  }
}

/** As providedInApp, for what the worker always provides: its absence means the app has no worker to operate. */
export function workerProvided<T>(moduleRef: ModuleRef, token: Type<T> | symbol): T {
  const instance = providedInApp(moduleRef, token);
  if (instance === undefined) {
    throw new WorkerSetupError('WorkerOperationsModule: this app has no worker; import WorkflowWorkerModule.forRoot(...) (or forRootAsync) in it too');
  }
  return instance;
}
