import type { Command } from 'commander';
import { parseIntegerArgument } from './arguments';
import { formatDeadLetterList } from './format';
import type { Invocation } from './invocation';

/** `wf dead-letters …`: what dispatch gave up on. */
export function registerDeadLetterCommands(program: Command, invocation: Invocation): void {
  const deadLetters = program.command('dead-letters').description('list, redrive and delete what dispatch gave up on');

  deadLetters
    .command('list')
    .description('list dead letters, newest first')
    .option('--limit <n>', 'at most this many (1..500, default 50)', parseIntegerArgument)
    .option('--cursor <cursor>', 'the page after this cursor (printed after a full page)')
    .action(
      invocation.action(async ({ client, output }, options: { limit?: number; cursor?: string }) => {
        const page = await client.listDeadLetters(options);
        output.result(page, () => formatDeadLetterList(page.deadLetters, page.nextCursor));
      }),
    );

  deadLetters
    .command('redrive <id>')
    .description("put the dead letter's run back in motion and remove the letter")
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        const result = await client.redriveDeadLetter(id);
        output.result(result, () => `dead letter ${id} redriven: ${result.action} (run ${result.runStatus})`);
      }),
    );

  deadLetters
    .command('delete <id>')
    .description('remove a dead letter')
    .action(
      invocation.action(async ({ client, output }, id: string) => {
        await client.deleteDeadLetter(id);
        output.result({ id, deleted: true }, () => `dead letter ${id} deleted`);
      }),
    );
}
