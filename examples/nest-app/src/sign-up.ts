import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { SignupModule, SignupService } from './signup.service';

/** `node dist/sign-up.js <email>`: signs one user up and prints the run's result as JSON. */
async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(SignupModule, { logger: false });
  try {
    const { run, accountId } = await app.get(SignupService).signUp(process.argv[2] ?? '');
    const { id, status, attempt, output, error, tasks } = run;
    process.stdout.write(`${JSON.stringify({ id, status, attempt, output, error, tasks, accountId })}\n`);
  } finally {
    await app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
