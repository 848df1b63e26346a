// search_path values read as Postgres reads them (SplitIdentifierString, GUC_LIST_QUOTE).
import { describe, expect, it } from 'vitest';
import {
  parseSearchPathText,
  searchPathFromSetArgs,
  truncateIdentifier,
} from '../../../src/sql/search-path-text.js';
import { checkTextSetting, parsePgBool } from '../../../src/sql/session-settings.js';

describe('parseSearchPathText', () => {
  it('splits, trims, folds unquoted names and keeps quoted ones', () => {
    expect(parseSearchPathText(' x , "Y" ,Public')).toEqual(['x', 'Y', 'public']);
    expect(parseSearchPathText('"a""b", "c, d"')).toEqual(['a"b', 'c, d']);
    expect(parseSearchPathText('"$user", public')).toEqual(['$user', 'public']);
  });
  it('reads blank text as the empty path', () => {
    expect(parseSearchPathText('')).toEqual([]);
    expect(parseSearchPathText('   ')).toEqual([]);
  });
  it('rejects what Postgres rejects', () => {
    for (const bad of ['a,', ',a', 'a,,b', '""', '"a', 'a b', '"a"b'])
      expect(parseSearchPathText(bad), bad).toBeNull();
  });
  it('truncates names to 63 bytes without splitting a character', () => {
    expect(truncateIdentifier('x'.repeat(70))).toBe('x'.repeat(63));
    expect(Buffer.byteLength(truncateIdentifier('é'.repeat(40)))).toBe(62);
    expect(parseSearchPathText('y'.repeat(64))).toEqual(['y'.repeat(63)]);
  });
  it('takes each SET argument whole', () => {
    expect(searchPathFromSetArgs(['a, b', 'C'])).toEqual(['a, b', 'C']);
  });
});

describe('text settings', () => {
  it('parses booleans as parse_bool does', () => {
    expect(['on', 'ON', 't', 'true', 'y', 'yes', '1'].map(parsePgBool)).toEqual(Array(7).fill(true));
    expect(['off', 'of', 'f', 'false', 'n', 'no', '0'].map(parsePgBool)).toEqual(Array(7).fill(false));
    expect(['o', '', 'maybe', '2'].map(parsePgBool)).toEqual([null, null, null, null]);
  });
  it('keeps client_encoding UTF8 and standard_conforming_strings on', () => {
    expect(checkTextSetting('client_encoding', 'UTF-8')).toBeUndefined();
    expect(checkTextSetting('client_encoding', 'unicode')).toBeUndefined();
    expect(checkTextSetting('client_encoding', 'SQL_ASCII')?.sqlstate).toBe('0A000');
    expect(checkTextSetting('standard_conforming_strings', 'on')).toBeUndefined();
    expect(checkTextSetting('standard_conforming_strings', 'of')?.sqlstate).toBe('0A000');
    expect(checkTextSetting('standard_conforming_strings', null)).toBeUndefined();
  });
});
