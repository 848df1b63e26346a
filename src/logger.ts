// The process logger: pino JSON lines on stderr, or pretty-printed with --pretty.
import pino, { type Logger } from 'pino';

/**
 * Makes the logger. `pretty` formats lines for a terminal (pino-pretty); otherwise one JSON
 * object per line on stderr. `level` is a pino level name (default `info`).
 */
export function makeLogger(opts: { pretty?: boolean; level?: string } = {}): Logger {
  const level = opts.level ?? process.env.PGWARDEN_LOG_LEVEL ?? 'info';
  if (opts.pretty) {
    return pino({
      level,
      transport: {
        target: 'pino-pretty',
        options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
      },
    });
  }
  return pino({ level, base: undefined }, pino.destination({ dest: 2, sync: false }));
}
