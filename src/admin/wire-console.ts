// The wire admin console (`psql -d pgwarden`): the simple query protocol, one command per Query, the session goes on after errors.
import type { ConsoleConnection, ConsoleFactory, ConsoleHost } from '../proxy/console-port.js';
import { readyForQuery } from '../wire/backend-encode.js';
import { EXTENDED_QUERY_MESSAGES, FrontendCode } from '../wire/codes.js';
import { errorResponse } from '../wire/error-fields.js';
import { type Frame, MessageFramer } from '../wire/framer.js';
import { decodeQuery } from '../wire/frontend.js';
import type { ProtocolError } from '../wire/protocol-error.js';
import { runConsoleCommand } from './wire-console-commands.js';

/** The longest command the console reads (bytes); a longer message is FATAL 08P01, as Postgres ends on a broken length. */
const MAX_MESSAGE_BYTES = 1 << 20;

const EXTENDED_ONLY =
  'the admin console answers only the simple query protocol; send its commands as plain queries (psql -c "SHOW CLIENTS")';

/** One console connection: reads its messages in order and answers each. */
class ConsoleSession {
  private readonly framer = new MessageFramer({ maxMessageBytes: MAX_MESSAGE_BYTES, startup: false });
  /** After an extended-protocol message: skip to Sync. */
  private skipping = false;
  /** Messages are answered one at a time (RELOAD awaits the config). */
  private queue: Promise<void> = Promise.resolve();
  /** While the client has not read what was written: settles once the socket drained (or closed). */
  private unread: Promise<void> | undefined;

  constructor(
    private readonly host: ConsoleHost,
    private readonly conn: ConsoleConnection,
  ) {}

  start(): void {
    const socket = this.conn.socket;
    socket.on('data', (chunk: Buffer) => {
      let frames: Frame[];
      try {
        frames = this.framer.push(chunk);
      } catch (e) {
        this.conn.terminate({
          code: (e as ProtocolError).sqlstate ?? '08P01',
          message: (e as Error).message,
        });
        return;
      }
      for (const f of frames) this.queue = this.queue.then(() => this.handle(f));
    });
    socket.resume();
  }

  /**
   * Writes one answer. A client that does not read its answers is not read either (as the relay
   * pauses a client whose upstream needs a drain): once the socket's buffer is over its high-water
   * mark the socket is paused and the next message waits for the drain, so a client pipelining
   * small commands with large answers (SHOW HELP: 15 bytes in, ~300 out; a long word echoed in a
   * syntax error) cannot make the proxy buffer answers without bound.
   */
  private write(messages: readonly Buffer[]): void {
    const s = this.conn.socket;
    if (!s.writable) return;
    s.cork();
    for (const m of messages) s.write(m);
    s.uncork();
    if (s.writableNeedDrain && !this.unread) {
      s.pause();
      this.unread = new Promise((resolve) => {
        const done = () => {
          s.off('drain', done);
          s.off('close', done);
          this.unread = undefined;
          s.resume();
          resolve();
        };
        s.on('drain', done);
        s.on('close', done);
      });
    }
  }

  private async handle(f: Frame): Promise<void> {
    if (this.unread) await this.unread;
    if (this.skipping && f.code !== FrontendCode.Sync) return;
    switch (f.code) {
      case FrontendCode.Query: {
        let sql: string;
        try {
          sql = decodeQuery(f.payload).sql;
        } catch (e) {
          const err = e as ProtocolError;
          this.write([
            errorResponse({ severity: 'ERROR', code: err.sqlstate, message: err.message }),
            readyForQuery('I'),
          ]);
          return;
        }
        const caller = this.conn.caller();
        if (!caller) {
          this.conn.terminate({
            code: '28000',
            message: 'your login is no longer valid (the policy changed)',
          });
          return;
        }
        let reply: Buffer[];
        try {
          reply = await runConsoleCommand(sql, this.host, caller);
        } catch (e) {
          this.conn.log.error(
            { event: 'console-error', err: (e as Error).message },
            'admin console command failed',
          );
          reply = [errorResponse({ severity: 'ERROR', code: 'XX000', message: 'pgwarden internal error' })];
        }
        this.write([...reply, readyForQuery('I')]);
        return;
      }
      case FrontendCode.Sync:
        this.skipping = false;
        this.write([readyForQuery('I')]);
        return;
      case FrontendCode.Flush:
        return;
      case FrontendCode.FunctionCall:
        this.write([
          errorResponse({ severity: 'ERROR', code: '0A000', message: EXTENDED_ONLY }),
          readyForQuery('I'),
        ]);
        return;
      case FrontendCode.Terminate:
        this.conn.socket.end();
        return;
      case FrontendCode.CopyData:
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        // Outside COPY, Postgres ignores these (PostgresMain).
        return;
      default:
        if (EXTENDED_QUERY_MESSAGES.has(f.code)) {
          this.skipping = true;
          this.write([errorResponse({ severity: 'ERROR', code: '0A000', message: EXTENDED_ONLY })]);
          return;
        }
        this.conn.terminate({ code: '08P01', message: `invalid frontend message type ${f.code}` });
    }
  }
}

/**
 * The wire admin console (issue 21), for `startProxy`'s `console` option: a client that logs in (SCRAM,
 * as to any database) to the virtual database `pgwarden` gets PgBouncer-style commands over the simple
 * query protocol (wire-console-commands.ts). An extended-protocol message gets ERROR 0A000 and the messages
 * up to Sync are skipped (then ReadyForQuery); FunctionCall gets 0A000; an unknown message type is
 * FATAL 08P01 as in Postgres. Bad input costs a command, never the session.
 */
export const wireConsole: ConsoleFactory = (host) => ({
  serve: (conn) => new ConsoleSession(host, conn).start(),
});
