// `pgwarden passwd` on a terminal: nothing echoed, the password asked twice, a mismatch prints nothing.
import { EventEmitter } from 'node:events';
import { describe, expect, test } from 'vitest';
import { askNewPassword, hiddenLineReader, type RawTerminal } from '../../src/terminal-prompt.js';

/** A terminal whose keystrokes the test types; it records raw mode and what was written. */
class FakeTerminal extends EventEmitter implements RawTerminal {
  raw = false;
  written = '';
  setRawMode(raw: boolean): this {
    this.raw = raw;
    return this;
  }
  resume(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  type(keys: string): void {
    this.emit('data', Buffer.from(keys, 'utf8'));
  }
  write(s: string): boolean {
    this.written += s;
    return true;
  }
}

async function passwd(keys: string[]) {
  const t = new FakeTerminal();
  const reader = hiddenLineReader(t, t);
  const outcome = askNewPassword((p) => reader.ask(p));
  for (const k of keys) {
    await new Promise((r) => setImmediate(r));
    t.type(k);
  }
  const result = await outcome;
  const rawWhileAsking = t.raw;
  reader.close();
  return { result, written: t.written, rawWhileAsking, rawAfter: t.raw };
}

describe('pgwarden passwd on a terminal', () => {
  test('asks twice; the same password twice is accepted, nothing echoed', async () => {
    const r = await passwd(['hunter2\r', 'hunter2\r']);
    expect(r.result).toEqual({ ok: true, password: 'hunter2' });
    expect(r.written).toBe('Password: \nAgain: \n');
    expect(r.rawWhileAsking).toBe(true);
    expect(r.rawAfter).toBe(false);
  });

  test('two different passwords: refused, with a message', async () => {
    const r = await passwd(['hunter2\r', 'hunter3\r']);
    expect(r.result).toEqual({ ok: false, message: 'the passwords do not match; nothing was printed' });
  });

  test('typed ahead in one chunk, Backspace edits, CR LF is one line end', async () => {
    const r = await passwd(['hunter22\u007f\r\nhunter2\n']);
    expect(r.result).toEqual({ ok: true, password: 'hunter2' });
  });

  test('Ctrl-C aborts; an empty password is refused', async () => {
    expect((await passwd(['hun\u0003'])).result).toEqual({ ok: false, message: 'cancelled', aborted: true });
    expect((await passwd(['\r'])).result).toEqual({ ok: false, message: 'empty password' });
  });
});
