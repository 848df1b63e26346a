// The process logger and the audit logger: pino JSON lines on stderr or in a file (log-file.ts), or pretty-printed with --pretty.
import pino, { type Logger } from 'pino';
import PinoPretty from 'pino-pretty';
import { LineBatch } from './log-batch.js';
import { type LogFile, type LogFileOptions, openLogFile } from './log-file.js';

/** pino-pretty on stderr, as `--pretty` prints every line (the process log and the audit alike). */
const PRETTY_TRANSPORT = {
  target: 'pino-pretty',
  options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
};

/**
 * Makes the logger. `pretty` formats lines for a terminal (pino-pretty); otherwise one JSON
 * object per line on stderr. `level` is a pino level name (default `info`). `batched`: lines are
 * written in batches of at least 8 KiB or every 500 ms, as the audit logger writes them (for
 * `pgwarden mcp`, whose one log carries the audit line of every statement; flushed at exit).
 */
export function makeLogger(opts: { pretty?: boolean; level?: string; batched?: boolean } = {}): Logger {
  const level = opts.level ?? process.env.PGWARDEN_LOG_LEVEL ?? 'info';
  if (opts.pretty) {
    return pino({ level, transport: PRETTY_TRANSPORT });
  }
  if (!opts.batched) return pino({ level, base: undefined }, pino.destination({ dest: 2, sync: false }));
  const dest = pino.destination({ dest: 2, sync: false, minLength: 8192 });
  setInterval(() => dest.flush(), 500).unref();
  return pino({ level, base: undefined }, dest);
}

/**
 * The process log in a file (config `log.file`): JSON lines, whatever `--pretty` says, each written
 * at once; `file.reopen()` on SIGHUP, rotation by size as `file` says (log-file.ts). Rotation
 * errors are logged to stderr.
 */
export function makeFileLogger(file: LogFileOptions, level?: string): { logger: Logger; file: LogFile } {
  const opened = openLogFile(file, (e) =>
    process.stderr.write(`pgwarden: cannot rotate ${file.file}: ${e.message}\n`),
  );
  const logger = pino(
    { level: level ?? process.env.PGWARDEN_LOG_LEVEL ?? 'info', base: undefined },
    opened.dest,
  );
  return { logger, file: opened };
}

/**
 * Code units of audit lines gathered before they are handed to their destination, and bytes its
 * SonicBoom writes at most at once (issue 18): every write of an asynchronous destination is a job
 * of libuv's thread pool (a futex wake-up of a worker, the write, a wake-up back). At 8 KiB
 * (about 25 pgbench statements a write) those jobs were what pgwarden's threads other than the
 * main one spent, 4–10 µs per transaction against the bare pipe's ~1; lines still wait at most
 * `flushMs` and are flushed at exit.
 */
export const AUDIT_BATCH_UNITS = 64 * 1024;
const AUDIT_MAX_WRITE = 2 * AUDIT_BATCH_UNITS;

/**
 * The audit logger: one JSON line per statement, to `file` (appended; reopened on SIGHUP and
 * rotated by size as log-file.ts does) or stderr, written in batches of at least 64 KiB
 * ({@link AUDIT_BATCH_UNITS}) or every
 * `flushMs` (default 500 ms) so that a busy proxy does not pay one write per statement, and
 * gathered in a LineBatch (log-batch.ts) so that it does not pay SonicBoom's work per line. With
 * `pretty` (a person watching: `--pretty`, `pgwarden demo`), audit lines go to stderr
 * pretty-printed like the process log (one format per run), and with a `file` to the file as well;
 * a file always gets JSON. `reopen()` opens the file's path again (a no-op on stderr); `close()`
 * flushes what is buffered (call it before exiting).
 */
export function makeAuditLogger(
  file?: LogFileOptions,
  opts: { flushMs?: number; pretty?: boolean } = {},
): { logger: Logger; reopen: () => void; close: () => void } {
  if (opts.pretty && file === undefined) {
    const logger = pino({ level: 'info', base: undefined, transport: PRETTY_TRANSPORT });
    return { logger, reopen: () => {}, close: () => logger.flush() };
  }
  const opened = file
    ? openLogFile({ ...file, minLength: 8192, maxWrite: AUDIT_MAX_WRITE }, (e) =>
        process.stderr.write(`pgwarden: cannot rotate ${file.file}: ${e.message}\n`),
      )
    : undefined;
  const dest = new LineBatch(
    opened?.dest ?? pino.destination({ dest: 2, sync: false, minLength: 8192, maxWrite: AUDIT_MAX_WRITE }),
    AUDIT_BATCH_UNITS,
  );
  const timer = setInterval(() => dest.flush(), opts.flushMs ?? 500);
  timer.unref();
  const logger =
    opts.pretty && opened
      ? pino(
          { level: 'info', base: undefined },
          pino.multistream([
            { stream: dest },
            { stream: PinoPretty({ ...PRETTY_TRANSPORT.options, destination: 2, sync: false }) },
          ]),
        )
      : pino({ level: 'info', base: undefined }, dest);
  return {
    logger,
    reopen: () => opened?.reopen(),
    close: () => {
      clearInterval(timer);
      dest.close();
    },
  };
}
