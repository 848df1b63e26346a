// A log file for pino: SonicBoom (pino.destination) appending JSON lines, reopened on SIGHUP (logrotate's convention) and rotated by size (file → file.1 → … → file.keep).
import fs from 'node:fs';
import pino from 'pino';

/** Where a log goes (config `log` / `audit`): the file, and an optional size-based rotation. */
export interface LogFileOptions {
  /** Absolute path of the file; appended to, created (with its folder) when missing. */
  readonly file: string;
  /** Rotate once the file holds this many bytes (undefined: never; logrotate's job then). */
  readonly maxSizeBytes?: number | undefined;
  /** How many rotated files are kept (`file.1` the newest … `file.<keep>`), the older ones deleted. */
  readonly keep: number;
  /** Bytes buffered before a write (pino.destination's minLength; 0 writes every line at once). */
  readonly minLength?: number;
  /** Most bytes SonicBoom writes at once (pino.destination's maxWrite; default 16 KiB). */
  readonly maxWrite?: number;
}

/** A log file's destination (a pino `DestinationStream`), and what the process does with it. */
export interface LogFile {
  readonly dest: ReturnType<typeof pino.destination>;
  /**
   * SIGHUP: opens the configured path again, so that after logrotate's rename the next lines go to
   * a new file there (lines buffered before it go to the renamed one).
   */
  reopen(): void;
  /** Writes what is buffered (synchronously; call before exiting). */
  flushSync(): void;
}

/** The open log files, flushed synchronously when the process exits (as pino does its own). */
const openFiles = new Set<ReturnType<typeof pino.destination>>();
let exitHooked = false;

function flushOnExit(dest: ReturnType<typeof pino.destination>): void {
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      for (const d of openFiles) {
        try {
          d.flushSync();
        } catch {
          // A file that broke (its disk gone): nothing more can be written to it.
        }
      }
    });
  }
  openFiles.add(dest);
  dest.once('close', () => openFiles.delete(dest));
}

/**
 * Renames `file.<keep-1>` → `file.<keep>`, …, `file` → `file.1` (the oldest beyond `keep` is
 * overwritten, so deleted), as logrotate names rotated files. A missing file is skipped.
 */
function shift(file: string, keep: number): void {
  for (let i = keep - 1; i >= 0; i--) {
    const from = i === 0 ? file : `${file}.${i}`;
    try {
      fs.renameSync(from, `${file}.${i + 1}`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

/**
 * Opens `opts.file` for appending through pino.destination (SonicBoom): opened synchronously, so
 * that a path that cannot be opened throws here (ENOENT, EACCES: the Node error, its `path` the
 * file) instead of losing every line, and a process that exits at once (a listen address taken)
 * has an open file for pino's flush on exit (SonicBoom throws "sonic boom is not ready yet" before
 * its open completes); then written asynchronously. With
 * `maxSizeBytes`, after each write that takes the file to the bound or past it, the file is
 * rotated ({@link shift}) and reopened; the size counts from what the file held when opened. Every
 * worker of `serve --workers N` writes its own lines to the same path (O_APPEND keeps each write
 * whole); a worker that finds the path rotated by another (a new inode there) only reopens.
 * Errors of the rotation (a folder not writable) are reported on `onError` and writing goes on
 * into the current file.
 */
export function openLogFile(opts: LogFileOptions, onError: (e: Error) => void = () => {}): LogFile {
  const dest = pino.destination({
    dest: opts.file,
    sync: true,
    minLength: opts.minLength ?? 0,
    ...(opts.maxWrite !== undefined ? { maxWrite: opts.maxWrite } : {}),
    mkdir: true,
  });
  // SonicBoom reads `sync` at every write and reopen: from here on, asynchronous; pino flushes on
  // exit only the destinations it made asynchronous, so this one is flushed by flushOnExit.
  (dest as unknown as { sync: boolean }).sync = false;
  flushOnExit(dest);
  const sizeOf = (p: string) => {
    try {
      return fs.statSync(p);
    } catch {
      return undefined;
    }
  };
  let size = sizeOf(opts.file)?.size ?? 0;
  let rotating = false;
  const reopen = () => {
    dest.reopen();
    size = sizeOf(opts.file)?.size ?? 0;
  };
  const max = opts.maxSizeBytes;
  if (max !== undefined)
    dest.on('write', (n: number) => {
      size += n;
      if (size < max || rotating) return;
      rotating = true;
      try {
        // Another worker may have rotated it already: then the path holds a new, smaller file.
        const atPath = sizeOf(opts.file);
        const fd = (dest as unknown as { fd: number }).fd;
        const ours = fd >= 0 ? fs.fstatSync(fd) : undefined;
        if (atPath && ours && atPath.ino === ours.ino && atPath.size >= max) shift(opts.file, opts.keep);
        reopen();
      } catch (e) {
        onError(e as Error);
        size = 0;
      } finally {
        rotating = false;
      }
    });
  return { dest, reopen, flushSync: () => dest.flushSync() };
}
