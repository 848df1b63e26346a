// The process logger: pino JSON lines on stderr, or pretty-printed with --pretty.
import pino, { type Logger } from 'pino';

/** pino-pretty on stderr, as `--pretty` prints every line (the process log and the audit alike). */
const PRETTY_TRANSPORT = {
  target: 'pino-pretty',
  options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
};

/**
 * Makes the logger. `pretty` formats lines for a terminal (pino-pretty); otherwise one JSON
 * object per line on stderr. `level` is a pino level name (default `info`).
 */
export function makeLogger(opts: { pretty?: boolean; level?: string } = {}): Logger {
  const level = opts.level ?? process.env.PGWARDEN_LOG_LEVEL ?? 'info';
  if (opts.pretty) {
    return pino({ level, transport: PRETTY_TRANSPORT });
  }
  return pino({ level, base: undefined }, pino.destination({ dest: 2, sync: false }));
}

/**
 * The audit logger: one JSON line per statement, to `file` (appended) or stderr, written in
 * batches of at least 8 KiB or every `flushMs` (default 500 ms) so that a busy proxy does not pay
 * one write per statement. With `pretty` and no `file`, audit lines go to stderr pretty-printed
 * like the process log (one format per run); a file always gets JSON. `close()` flushes what is
 * buffered (call it before exiting).
 */
export function makeAuditLogger(
  file?: string,
  opts: { flushMs?: number; pretty?: boolean } = {},
): { logger: Logger; close: () => void } {
  if (opts.pretty && file === undefined) {
    const logger = pino({ level: 'info', base: undefined, transport: PRETTY_TRANSPORT });
    return { logger, close: () => logger.flush() };
  }
  const dest = pino.destination({ dest: file ?? 2, sync: false, minLength: 8192, mkdir: file !== undefined });
  const timer = setInterval(() => dest.flush(), opts.flushMs ?? 500);
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
