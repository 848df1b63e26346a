// set_config(name, value, is_local) in a row statement: the session effect it has, or the MANAGE / refusal it needs.

import type { AnalysisRefusal, Requirement, SessionEffect } from './analysis-types.js';
import { constText, stringList, walkNodes } from './node-values.js';
import { pgSettingsName } from './pg-settings-name.js';
import { parseSearchPathText } from './search-path-text.js';
import {
  checkTextSetting,
  HARMLESS_SETTINGS,
  isPgwardenSetting,
  PGWARDEN_SETTING_MESSAGE,
  parsePgBool,
  TEXT_SETTINGS,
} from './session-settings.js';

/** What the set_config calls of one statement amount to. */
export interface SetConfigOutcome {
  readonly effects: SessionEffect[];
  readonly requirements: Requirement[];
  readonly refusal?: AnalysisRefusal;
}

/** Whether a FuncCall's name can be the built-in set_config (`set_config` or `pg_catalog.set_config`). */
function isSetConfigName(funcname: unknown): boolean {
  const names = stringList(funcname);
  return (
    (names.length === 1 && names[0] === 'set_config') ||
    (names.length === 2 && names[0] === 'pg_catalog' && names[1] === 'set_config')
  );
}

/**
 * The FuncCall nodes of a simple top-level select list (`SELECT set_config(…), …` with no FROM,
 * WHERE, GROUP BY, HAVING, LIMIT, WITH, set operation or VALUES): calls Postgres evaluates exactly
 * once, unconditionally, so their effect on search_path is certain.
 */
function unconditionalCalls(nodeType: string, node: unknown): Set<unknown> {
  const out = new Set<unknown>();
  if (nodeType !== 'SelectStmt' || node === null || typeof node !== 'object') return out;
  const s = node as Record<string, unknown>;
  const blocking = [
    'fromClause',
    'whereClause',
    'groupClause',
    'havingClause',
    'limitCount',
    'limitOffset',
    'withClause',
    'valuesLists',
    'larg',
    'windowClause',
    'distinctClause',
  ];
  if (blocking.some((k) => s[k] !== undefined)) return out;
  for (const t of (s.targetList as unknown[] | undefined) ?? []) {
    const fc = (t as { ResTarget?: { val?: { FuncCall?: unknown } } }).ResTarget?.val?.FuncCall;
    if (fc) out.add(fc);
  }
  return out;
}

/**
 * Finds every call that may be the built-in set_config in a row statement and decides it.
 * Input: the statement's node type and fields, and a converter from byte to character offsets.
 * Output (DESIGN.md "Side channels", "Settings that change how text is read"):
 * - `set_config('search_path', '<constant>', <constant bool>)` as an unconditional top-level call:
 *   a `set-search-path` effect (value split as Postgres's SplitIdentifierString does); anywhere
 *   else, or with a value that is not a constant: refused 0A000, since the session could no longer
 *   track the path the next statement resolves names with; an unparsable path: 22023;
 * - client_encoding / standard_conforming_strings: a constant keeping UTF8 / on, else refused 0A000;
 * - a listed harmless setting: nothing (its value argument's column uses are `compute` uses);
 * - any other setting (`set_config('x.y', ssn, false)` carries a value out): MANAGE
 *   (`set_config x.y`); a setting name that is not a constant: refused 0A000, except pg_dump 15's
 *   `SELECT set_config(name, …) FROM pg_settings WHERE name = '<constant>'`, read as
 *   `set_config('<constant>', …)` (pg-settings-name.ts; `readsPgSettings`: the query analysis
 *   resolved the statement's only relation to pg_catalog.pg_settings).
 * A NULL name, value or is_local argument makes the strict function return NULL without effect.
 */
export function analyzeSetConfigCalls(
  nodeType: string,
  node: unknown,
  toChar: (byte: number) => number,
  readsPgSettings = false,
): SetConfigOutcome {
  const effects: SessionEffect[] = [];
  const requirements: Requirement[] = [];
  let refusal: AnalysisRefusal | undefined;
  const refuse = (sqlstate: string, message: string, loc: number) => {
    refusal ??= { sqlstate, message, location: toChar(loc) };
  };
  const topLevel = unconditionalCalls(nodeType, node);
  const calls: Record<string, unknown>[] = [];
  walkNodes(node, (type, fields) => {
    if (type === 'FuncCall' && isSetConfigName(fields.funcname)) calls.push(fields);
    return true;
  });
  // Postgres evaluates a select list left to right: walk order is source order for top-level calls.
  for (const call of calls) {
    const loc = typeof call.location === 'number' ? call.location : 0;
    const args = (call.args as unknown[] | undefined) ?? [];
    if (args.length !== 3) continue; // not the built-in (the query analysis resolves or refuses it)
    const [nameArg, valueArg, localArg] = args;
    const written = constText(nameArg);
    const name = written === undefined ? pgSettingsName(nodeType, node, call, readsPgSettings) : written;
    if (name === null) continue;
    if (name === undefined) {
      refuse('0A000', 'set_config with a setting name that is not a constant cannot be analyzed', loc);
      continue;
    }
    const setting = name.toLowerCase();
    const value = constText(valueArg);
    const isLocal = constText(localArg);
    if (setting === 'search_path') {
      if (value === null || isLocal === null) continue;
      if (value === undefined || isLocal === undefined || parsePgBool(isLocal) === null) {
        refuse(
          '0A000',
          "set_config('search_path', …) needs a constant value and a constant is_local: pgwarden tracks search_path to resolve names",
          loc,
        );
        continue;
      }
      if (!topLevel.has(call)) {
        refuse(
          '0A000',
          "set_config('search_path', …) is tracked only as a call in the select list of a SELECT without FROM: elsewhere it may run any number of times",
          loc,
        );
        continue;
      }
      const path = parseSearchPathText(value);
      if (path === null) {
        refuse('22023', `invalid value for parameter "search_path": "${value}"`, loc);
        continue;
      }
      effects.push({ kind: 'set-search-path', path, local: parsePgBool(isLocal) === true });
      continue;
    }
    if (isPgwardenSetting(setting)) {
      refuse('42501', PGWARDEN_SETTING_MESSAGE(setting), loc);
      continue;
    }
    if (TEXT_SETTINGS.has(setting)) {
      if (value === null) continue;
      const r =
        value === undefined
          ? { sqlstate: '0A000', message: `set_config('${setting}', …) needs a constant value` }
          : checkTextSetting(setting, value);
      if (r) refuse(r.sqlstate, r.message, loc);
      continue;
    }
    if (HARMLESS_SETTINGS.has(setting)) continue;
    requirements.push({
      action: 'MANAGE',
      object: { level: 'database' },
      reason: `set_config ${setting}`,
      location: toChar(loc),
    });
  }
  return refusal ? { effects, requirements, refusal } : { effects, requirements };
}
