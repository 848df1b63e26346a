// Reading a new password on a terminal for `pgwarden passwd`: typed without echo, asked twice, both must match.

/** The part of a TTY stdin the prompt uses (process.stdin on a terminal). */
export interface RawTerminal {
  setRawMode(raw: boolean): unknown;
  resume(): unknown;
  pause(): unknown;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  off(event: 'data', listener: (chunk: Buffer) => void): unknown;
}

/** Reads lines from a terminal in raw mode (nothing echoed). */
export interface HiddenLineReader {
  /**
   * Writes `prompt` to `out`, then resolves with the next line typed (Backspace edits it), or
   * null on Ctrl-C or Ctrl-D on an empty line. Keystrokes typed ahead are kept for the next call.
   */
  ask(prompt: string): Promise<string | null>;
  /** Leaves raw mode and stops reading. */
  close(): void;
}

/** A {@link HiddenLineReader} on `stdin` (put in raw mode until `close`), prompting on `out`. */
export function hiddenLineReader(stdin: RawTerminal, out: { write(s: string): unknown }): HiddenLineReader {
  let pending = '';
  let waiting: ((line: string | null) => void) | undefined;
  let line = '';
  const feed = () => {
    while (waiting && pending.length > 0) {
      const ch = pending[0] ?? '';
      pending = pending.slice(1);
      const done = waiting;
      if (ch === '\u0003' || (ch === '\u0004' && line === '')) {
        waiting = undefined;
        line = '';
        out.write('\n');
        done(null);
      } else if (ch === '\r' || ch === '\n') {
        waiting = undefined;
        const typed = line;
        line = '';
        // A CR LF pair is one line end.
        if (ch === '\r' && pending[0] === '\n') pending = pending.slice(1);
        out.write('\n');
        done(typed);
      } else if (ch === '\u007f' || ch === '\b') line = [...line].slice(0, -1).join('');
      else line += ch;
    }
  };
  const onData = (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    feed();
  };
  stdin.setRawMode(true);
  stdin.on('data', onData);
  stdin.resume();
  return {
    ask(prompt) {
      out.write(prompt);
      return new Promise((resolve) => {
        waiting = resolve;
        feed();
      });
    },
    close() {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
    },
  };
}

/** The outcome of {@link askNewPassword}. */
export type NewPassword =
  | { readonly ok: true; readonly password: string }
  | { readonly ok: false; readonly message: string; readonly aborted?: true };

/**
 * Asks for a new password twice (`Password: `, `Again: `), as passwd(1) and `createuser -P` do:
 * a typing mistake cannot then become the stored verifier. Fails with a message when the two
 * differ or the first is empty; `aborted` on Ctrl-C.
 */
export async function askNewPassword(ask: (prompt: string) => Promise<string | null>): Promise<NewPassword> {
  const first = await ask('Password: ');
  if (first === null) return { ok: false, message: 'cancelled', aborted: true };
  if (first === '') return { ok: false, message: 'empty password' };
  const second = await ask('Again: ');
  if (second === null) return { ok: false, message: 'cancelled', aborted: true };
  if (second !== first) return { ok: false, message: 'the passwords do not match; nothing was printed' };
  return { ok: true, password: first };
}
