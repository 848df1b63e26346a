// Test helpers for the wire codec: hex literals, frame payload extraction, error-shape assertions.
import { expect } from 'vitest';
import { ProtocolError } from '../../../src/wire/protocol-error.js';

/** Buffer from a hex string; spaces are ignored. */
export function hex(s: string): Buffer {
  return Buffer.from(s.replace(/\s+/g, ''), 'hex');
}

/** Payload of one whole typed message (bytes after Byte1 + Int32). */
export function typedPayload(msg: Buffer): Buffer {
  return msg.subarray(5);
}

/** Payload of one whole untyped startup-phase message (bytes after the Int32 length). */
export function untypedPayload(msg: Buffer): Buffer {
  return msg.subarray(4);
}

/** Asserts `fn` throws a ProtocolError with the given SQLSTATE (and nothing else). */
export function expectProtocolError(fn: () => unknown, sqlstate = '08P01'): ProtocolError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected a ProtocolError').toBeInstanceOf(ProtocolError);
  const pe = caught as ProtocolError;
  expect(pe.sqlstate).toBe(sqlstate);
  expect(pe.name).toBe('ProtocolError');
  return pe;
}

/** Runs `fn`; returns normally when it succeeds or throws a ProtocolError, rethrows anything else. */
export function onlyProtocolErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ProtocolError)) throw err;
    if (!['08P01', '54000', '0A000', '22021', '22023'].includes(err.sqlstate)) throw err;
  }
}
