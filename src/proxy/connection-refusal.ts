// Refusing a connection at once: FATAL written, the socket kept open a moment so the client reads it, bounded in number.
import type net from 'node:net';
import { connectionRefused } from '../ops/metrics.js';
import { type ErrorFields, errorResponse } from '../wire/error-fields.js';

/**
 * Refused clients whose socket is kept open a moment after the error was written, so that their
 * StartupMessage arriving meanwhile is read (not answered with a reset that could discard the
 * error before the client reads it). Over this many at once, a refused socket is closed at once.
 */
const MAX_LINGERING_REFUSALS = 4096;
/** How long a refused socket lingers (ms). */
const REFUSAL_LINGER_MS = 2000;

/**
 * A function that refuses `socket` at once: counts the refusal (metric by SQLSTATE), writes `fields`
 * as an ErrorResponse (FATAL) and ends the socket, reading and dropping the client's bytes meanwhile,
 * and destroys it after REFUSAL_LINGER_MS. Over MAX_LINGERING_REFUSALS lingering at once, a refused
 * socket is destroyed at once. One counter per returned function (one per listener).
 */
export function lingeringRefusals(): (socket: net.Socket, fields: ErrorFields) => void {
  let lingering = 0;
  return (socket: net.Socket, fields: ErrorFields) => {
    socket.on('error', () => {});
    connectionRefused(fields.code);
    if (lingering >= MAX_LINGERING_REFUSALS) {
      socket.destroy();
      return;
    }
    lingering++;
    socket.end(errorResponse(fields));
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
    timer.unref();
    socket.once('close', () => {
      lingering--;
      clearTimeout(timer);
    });
  };
}
