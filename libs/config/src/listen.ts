/**
 * Starts an app's HTTP server, or prints the one line that says why it cannot (its port taken, a host name
 * that is not this machine's) and exits with 1 once the app has closed: by then its modules have started
 * (a worker may hold runs), and closing lets them stop as on any shutdown.
 */
export async function listenOrExit(app: string, address: string, closable: { close(): Promise<void> }, listen: () => Promise<unknown>): Promise<void> {
  try {
    await listen();
  } catch (error) {
    console.error(`${app}: cannot listen on ${address}: ${(error as Error).message}`);
    await closable.close().catch(() => undefined);
    process.exit(1);
  }
}
