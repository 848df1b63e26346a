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

/**
 * The audit logger: one JSON line per statement, to `file` (appended) or stderr, written in
 * batches of at least 8 KiB or every `flushMs` (default 500 ms) so that a busy proxy does not pay
 * one write per statement. `close()` flushes what is buffered (call it before exiting).
 */
export function makeAuditLogger(file?: string, flushMs = 500): { logger: Logger; close: () => void } {
  const dest = pino.destination({ dest: file ?? 2, sync: false, minLength: 8192, mkdir: file !== undefined });
  const timer = setInterval(() => dest.flush(), flushMs);
  timer.unref();
  const logger = pino({ level: 'info', base: undefined }, dest);
  return {
    logger,
    close: () => {
      clearInterval(timer);
      dest.flushSync();
    },
  };
}
