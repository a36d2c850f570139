/**
 * Where a command's result goes: a human text on stdout by default, JSON with `--json` (and then
 * nothing else on stdout, so scripts can parse it).
 */
export class Output {
  constructor(
    private readonly json: boolean,
    private readonly stdout: NodeJS.WritableStream,
    private readonly stderr: NodeJS.WritableStream,
  ) {}

  /** What a person should know of a command that succeeded (a start's warning): on stderr, whatever the format, so stdout stays the result. */
  warning(reason: string, message: string): void {
    this.stderr.write(`warning (${reason}): ${message}\n`);
  }

  /** A command's one result. */
  result(value: unknown, human: () => string): void {
    this.stdout.write(this.json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
  }

  /** One of a stream of results (`watch`): a JSON document per line with `--json`. */
  event(value: unknown, human: () => string): void {
    this.stdout.write(this.json ? `${JSON.stringify(value)}\n` : `${human()}\n`);
  }

  /** Data the command prints as it is, with or without `--json` (the JSON lines of `wf runs export`). */
  data(text: string): void {
    this.stdout.write(text);
  }
}
