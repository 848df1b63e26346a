// Test helpers for the wire codec: hex literals, frame payload extraction, error-shape assertions, pg-protocol's parser, sample fields.
import { Parser } from 'pg-protocol/dist/parser.js';
import { expect } from 'vitest';
import type { FieldDescription } from '../../../src/wire/backend.js';
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

/** Parses whole backend messages with pg-protocol (an independent implementation). */
export function pgParse(...msgs: Buffer[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  new Parser().parse(Buffer.concat(msgs), (m) => out.push(m as unknown as Record<string, unknown>));
  return out;
}

/** RowDescription fields at the edges of the format: an unsigned table OID, a negative attnum and size, binary, an empty name. */
export const sampleFields: FieldDescription[] = [
  { name: 'id', tableOid: 16384, columnAttnum: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 0 },
  {
    name: 'émail',
    tableOid: 4294967295,
    columnAttnum: -7,
    typeOid: 1043,
    typeSize: -1,
    typeModifier: 259,
    format: 1,
  },
  { name: '', tableOid: 0, columnAttnum: 0, typeOid: 25, typeSize: -2, typeModifier: -1, format: 0 },
];
