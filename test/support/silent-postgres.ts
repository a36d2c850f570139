import { createServer, type Server, type Socket } from 'node:net';

/**
 * A PostgreSQL that lets a session in and then never answers it, as a server whose storage stalled or whose
 * network went silent after the handshake does: the start-up is answered (trust: AuthenticationOk, then
 * ReadyForQuery), every statement after it is not. The sockets stay open until the client closes them, so a test
 * can see whether it did (`open`).
 */
export class SilentPostgres {
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => this.sockets.delete(socket));
      socket.once('data', () => socket.write(STARTUP_ANSWER));
    });
  }

  static async start(): Promise<SilentPostgres> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new SilentPostgres(server);
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Sessions the clients have not closed yet. */
  get open(): number {
    return this.sockets.size;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** AuthenticationOk ('R', length 8, 0), then ReadyForQuery ('Z', length 5, idle). */
const STARTUP_ANSWER = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]);
