// A TCP relay to a host:port that a test can pause (bytes stop flowing both ways, connections stay open) and resume.
import net from 'node:net';

/** A running relay: its port, and pause/resume/close. */
export interface PausableRelay {
  readonly port: number;
  /** Stops moving bytes in both directions (a store that hangs, not one that refuses). */
  pause(): void;
  /** Moves the held bytes and everything after them again. */
  resume(): void;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a free port) and relays each connection to `host:port`. */
export async function pausableRelay(host: string, port: number): Promise<PausableRelay> {
  let paused = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect({ host, port });
    const pair: [net.Socket, net.Socket] = [inbound, outbound];
    pairs.add(pair);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    if (paused) {
      inbound.pause();
      outbound.pause();
    }
    const end = () => {
      pairs.delete(pair);
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', end);
    outbound.on('error', end);
    inbound.on('close', end);
    outbound.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    pause() {
      paused = true;
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
      }
    },
    resume() {
      paused = false;
      for (const [a, b] of pairs) {
        a.resume();
        b.resume();
      }
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
