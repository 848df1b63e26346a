// ErrorResponse and NoticeResponse: their fields (severity, SQLSTATE, message, …), encoders and decoder.
import { BufferReader } from './buffer-reader.js';
import { BufferWriter } from './buffer-writer.js';
import { BackendCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

/**
 * Severities an ErrorResponse/NoticeResponse carries in its non-localized 'V' field.
 * Source: PostgreSQL 15 docs, 55.8 "Error and Notice Message Fields" (field V).
 */
export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'DEBUG' | 'INFO' | 'LOG';

const SEVERITIES: ReadonlySet<string> = new Set<Severity>([
  'ERROR',
  'FATAL',
  'PANIC',
  'WARNING',
  'NOTICE',
  'DEBUG',
  'INFO',
  'LOG',
]);

/**
 * The fields of an ErrorResponse or NoticeResponse.
 * `severity` is the non-localized 'V' field; `localizedSeverity` the 'S' field when it differs
 * (lc_messages other than English). `position`/`internalPosition` are 1-based character indexes.
 * `unknownFields` holds only field codes this module does not name (future additions), keyed by
 * the one-letter code, so re-encoding preserves them; named fields never appear there, so
 * deleting e.g. `detail` really removes the 'D' field.
 * Source: PostgreSQL 15 docs, 55.8 "Error and Notice Message Fields".
 */
export interface ErrorFields {
  severity: Severity;
  localizedSeverity?: string;
  code: string;
  message: string;
  detail?: string;
  hint?: string;
  position?: number;
  internalPosition?: number;
  internalQuery?: string;
  where?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
  file?: string;
  line?: string;
  routine?: string;
  unknownFields?: Map<string, string>;
}

/** Field codes in the order Postgres' send_message_to_frontend writes them. */
const FIELD_CODES: ReadonlyArray<readonly [string, keyof ErrorFields]> = [
  ['C', 'code'],
  ['M', 'message'],
  ['D', 'detail'],
  ['H', 'hint'],
  ['P', 'position'],
  ['p', 'internalPosition'],
  ['q', 'internalQuery'],
  ['W', 'where'],
  ['s', 'schema'],
  ['t', 'table'],
  ['c', 'column'],
  ['d', 'dataType'],
  ['n', 'constraint'],
  ['F', 'file'],
  ['L', 'line'],
  ['R', 'routine'],
];
const KNOWN_CODES: ReadonlyMap<string, keyof ErrorFields> = new Map([
  ['S', 'localizedSeverity'],
  ['V', 'severity'],
  ...FIELD_CODES,
]);

function encodeFields(code: number, f: ErrorFields): Buffer {
  const w = new BufferWriter(code, 128);
  w.byte(0x53).cstring(f.localizedSeverity ?? f.severity);
  w.byte(0x56).cstring(f.severity);
  for (const [c, key] of FIELD_CODES) {
    const v = f[key];
    if (v === undefined) continue;
    w.byte(c.charCodeAt(0)).cstring(String(v));
  }
  if (f.unknownFields) {
    for (const [c, v] of f.unknownFields) {
      if (c.length !== 1 || c === '\0' || KNOWN_CODES.has(c)) {
        throw new ProtocolError(`invalid or named error field code ${JSON.stringify(c)} in unknownFields`);
      }
      w.byte(c.charCodeAt(0)).cstring(v);
    }
  }
  return w.byte(0).finish();
}

/**
 * ErrorResponse ('E'): S (localized severity), V (severity), then each present field as Byte1
 * code + String, then a NUL. Throws ProtocolError 08P01 when a value contains NUL or an
 * `unknownFields` key is not a single unnamed code.
 * Source: PostgreSQL 15 docs, 55.7 "ErrorResponse" and 55.8 "Error and Notice Message Fields".
 */
export function errorResponse(fields: ErrorFields): Buffer {
  return encodeFields(BackendCode.ErrorResponse, fields);
}

/**
 * NoticeResponse ('N'): same layout and errors as errorResponse.
 * Source: PostgreSQL 15 docs, 55.7 "NoticeResponse" and 55.8.
 */
export function noticeResponse(fields: ErrorFields): Buffer {
  return encodeFields(BackendCode.NoticeResponse, fields);
}

/**
 * ErrorResponse ('E') or NoticeResponse ('N') payload to its fields. Unnamed field codes go to
 * `unknownFields`; `localizedSeverity` is set only when 'S' differs from 'V'.
 * Throws ProtocolError 08P01 on a missing NUL, a missing final NUL, trailing bytes, a missing
 * severity/code/message, an unknown severity (when 'V' is absent, 'S' must be one), a duplicated
 * field code, or a non-numeric position; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "ErrorResponse", 55.8 "Error and Notice Message Fields".
 */
export function decodeErrorResponse(payload: Buffer): ErrorFields {
  const r = new BufferReader(payload, 'ErrorResponse');
  const raw = new Map<string, string>();
  for (;;) {
    const c = r.byte('field type');
    if (c === 0) break;
    const code = String.fromCharCode(c);
    const value = r.cstring(`field ${code}`);
    if (raw.has(code)) r.fail(`duplicate field ${code}`);
    raw.set(code, value);
  }
  r.end();
  const s = raw.get('S');
  const v = raw.get('V');
  let severity: Severity;
  if (v !== undefined) {
    if (!SEVERITIES.has(v)) r.fail(`unknown severity ${JSON.stringify(v)}`);
    severity = v as Severity;
  } else {
    if (s === undefined || !SEVERITIES.has(s)) r.fail('missing or unknown severity');
    severity = s as Severity;
  }
  const code = raw.get('C');
  const message = raw.get('M');
  if (code === undefined) return r.fail('missing SQLSTATE code');
  if (message === undefined) return r.fail('missing message');
  const out: ErrorFields = { severity, code, message };
  if (s !== undefined && s !== severity) out.localizedSeverity = s;
  const unknown = new Map<string, string>();
  for (const [c, val] of raw) {
    const key = KNOWN_CODES.get(c);
    if (key === undefined) {
      unknown.set(c, val);
      continue;
    }
    switch (key) {
      case 'severity':
      case 'localizedSeverity':
      case 'code':
      case 'message':
        break;
      case 'position':
      case 'internalPosition':
        if (!/^[0-9]{1,10}$/.test(val)) r.fail(`non-numeric position ${JSON.stringify(val)}`);
        out[key] = Number(val);
        break;
      case 'unknownFields':
        break;
      default:
        out[key] = val;
    }
  }
  if (unknown.size > 0) out.unknownFields = unknown;
  return out;
}
