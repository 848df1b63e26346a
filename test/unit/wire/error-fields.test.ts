// ErrorResponse and NoticeResponse (src/wire/error-fields.ts): exact bytes, round trips of every field, pg-protocol's parser reading them, malformed payloads.
import { describe, expect, it } from 'vitest';
import { BackendCode } from '../../../src/wire/codes.js';
import {
  decodeErrorResponse,
  type ErrorFields,
  errorResponse,
  noticeResponse,
} from '../../../src/wire/error-fields.js';
import { expectProtocolError, hex, pgParse, typedPayload as tp } from './helpers.js';

const fullError: ErrorFields = {
  severity: 'ERROR',
  code: '23502',
  message: 'null value in column "email" of relation "customers" violates not-null constraint',
  detail: 'Failing row contains (1, null, secret).',
  hint: 'Provide an email.',
  position: 15,
  internalPosition: 3,
  internalQuery: 'SELECT 1',
  where: 'PL/pgSQL function f() line 3 at SQL statement',
  schema: 'public',
  table: 'customers',
  column: 'email',
  dataType: 'text',
  constraint: 'customers_email_not_null',
  file: 'execMain.c',
  line: '1883',
  routine: 'ExecConstraints',
};

describe('ErrorResponse encoder', () => {
  it('writes S, V, C and M byte for byte', () => {
    expect(errorResponse({ severity: 'FATAL', code: '28P01', message: 'x' })).toEqual(
      hex('45 0000001d 53 464154414c00 56 464154414c00 43 323850303100 4d 7800 00'),
    );
  });

  it('rejects a NUL in a value and an unknown field that would smuggle a known code', () => {
    expectProtocolError(() => errorResponse({ severity: 'ERROR', code: 'XX000', message: 'a\0b' }), '08P01');
    // A known code (D: DETAIL) and a code of two bytes.
    for (const unknownFields of [new Map([['D', 'smuggled detail']]), new Map([['ab', 'x']])])
      expectProtocolError(
        () => errorResponse({ severity: 'ERROR', code: 'XX000', message: 'm', unknownFields }),
        '08P01',
      );
  });
});

describe('ErrorResponse and NoticeResponse round trips', () => {
  it('round-trips ErrorResponse and NoticeResponse with every field', () => {
    expect(decodeErrorResponse(tp(errorResponse(fullError)))).toEqual(fullError);
    const notice: ErrorFields = {
      severity: 'NOTICE',
      code: '00000',
      message: 'relation exists, skipping',
    };
    const msg = noticeResponse(notice);
    expect(msg[0]).toBe(BackendCode.NoticeResponse);
    expect(decodeErrorResponse(tp(msg))).toEqual(notice);
  });

  it('keeps a localized severity and unknown field codes through a round trip', () => {
    const payload = Buffer.from('SFEHLER\0VERROR\0C42P01\0MRelation »x« existiert nicht\0P15\0Zfuture\0\0');
    const got = decodeErrorResponse(payload);
    expect(got).toEqual({
      severity: 'ERROR',
      localizedSeverity: 'FEHLER',
      code: '42P01',
      message: 'Relation »x« existiert nicht',
      position: 15,
      unknownFields: new Map([['Z', 'future']]),
    });
    expect(tp(errorResponse(got))).toEqual(payload);
  });

  it('drops DETAIL for good when the field is deleted (redaction)', () => {
    const got = decodeErrorResponse(tp(errorResponse(fullError)));
    delete got.detail;
    got.message = 'not_null_violation';
    const again = decodeErrorResponse(tp(errorResponse(got)));
    expect(again.detail).toBeUndefined();
    expect(again.message).toBe('not_null_violation');
    expect(errorResponse(got).includes(Buffer.from('Failing row'))).toBe(false);
  });

  it('accepts a pre-9.6 error without V', () => {
    expect(decodeErrorResponse(Buffer.from('SWARNING\0C01000\0Mw\0\0'))).toEqual({
      severity: 'WARNING',
      code: '01000',
      message: 'w',
    });
  });
});

describe("cross-check with pg-protocol's parser", () => {
  it('parses our ErrorResponse and NoticeResponse the same way', () => {
    const [err, notice] = pgParse(
      errorResponse(fullError),
      noticeResponse({ severity: 'NOTICE', code: '00000', message: 'n' }),
    );
    // pg-protocol gives the positions as the strings on the wire.
    expect(err).toMatchObject({ name: 'error', ...fullError, position: '15', internalPosition: '3' });
    expect(notice).toMatchObject({ name: 'notice', severity: 'NOTICE', message: 'n' });
  });
});

describe('the ErrorResponse decoder rejects malformed payloads', () => {
  it('ErrorResponse', () => {
    const bad = [
      'SERROR\0VERROR\0C42000\0Mm\0', // missing final NUL
      'SERROR\0VERROR\0C42000\0Mm', // unterminated value
      'SERROR\0VERROR\0C42000\0Mm\0\0x', // trailing bytes
      'SERROR\0VERROR\0Mm\0\0', // no code
      'SERROR\0VERROR\0C42000\0\0', // no message
      'C42000\0Mm\0\0', // no severity
      'SFEHLER\0C42000\0Mm\0\0', // localized severity without V
      'SERROR\0VOOPS\0C42000\0Mm\0\0', // unknown V
      'SERROR\0VERROR\0C42000\0Mm\0Mn\0\0', // duplicate field
      'SERROR\0VERROR\0C42000\0Mm\0Pabc\0\0', // non-numeric position
      '',
    ];
    for (const b of bad) expectProtocolError(() => decodeErrorResponse(Buffer.from(b, 'latin1')), '08P01');
    expectProtocolError(() => decodeErrorResponse(hex('53ff00 00')), '22021');
  });
});
