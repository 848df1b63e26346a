// Reads of the settings pgwarden's in-band catalog read leaves in a session (pgwarden_catalog.*): answered as Postgres answers an unknown setting.
import type { AnalysisRefusal, FunctionCall } from './analysis-types.js';
import { constText, stringList, walkNodes } from './node-values.js';

/**
 * The prefix of the settings through which the statements of pgwarden's in-band catalog read hand
 * what changed to each other (catalog-reads.ts, `set_config(…, true)`). Their values are undone
 * with the read's transaction or savepoint, but Postgres keeps a placeholder of each name for the
 * rest of the session (empty, hidden from SHOW ALL and pg_settings): `SHOW pgwarden_catalog.reread`
 * would answer '' where a connection without pgwarden gets 42704.
 */
const PREFIX = 'pgwarden_catalog.';

/** Whether `name` (as written; setting names are case-insensitive) is one of pgwarden's internal catalog settings. */
export function isInternalSetting(name: string): boolean {
  return name.toLowerCase().startsWith(PREFIX);
}

/**
 * Postgres's answer to reading a setting that does not exist (guc.c GetConfigOptionByName):
 * ERROR 42704 undefined_object `unrecognized configuration parameter "<name>"`, without a position.
 */
export function unknownSettingRefusal(name: string): AnalysisRefusal {
  return { sqlstate: '42704', message: `unrecognized configuration parameter "${name}"` };
}

/**
 * The refusal for the first `current_setting('<constant>'[, missing_ok])` of a statement (`node`,
 * whose resolved calls are `functions`) that names an internal setting, or undefined. With
 * `missing_ok` Postgres would answer NULL for a setting that does not exist: pgwarden refuses that
 * too (42704) rather than let the placeholder's '' through. A name that is not a constant is not
 * decided here (its value is '' outside the read itself, which runs in its own transaction or
 * savepoint; it tells at most that pgwarden read the catalog on this connection).
 */
export function currentSettingRefusal(
  node: unknown,
  functions: readonly FunctionCall[],
): AnalysisRefusal | undefined {
  if (!functions.some((f) => f.schema === 'pg_catalog' && f.name === 'current_setting')) return undefined;
  let out: AnalysisRefusal | undefined;
  walkNodes(node, (type, fields) => {
    if (out || type !== 'FuncCall') return !out;
    const names = stringList(fields.funcname);
    const builtin =
      (names.length === 1 && names[0] === 'current_setting') ||
      (names.length === 2 && names[0] === 'pg_catalog' && names[1] === 'current_setting');
    const args = (fields.args as unknown[] | undefined) ?? [];
    const name = builtin && (args.length === 1 || args.length === 2) ? constText(args[0]) : undefined;
    if (typeof name === 'string' && isInternalSetting(name)) out = unknownSettingRefusal(name);
    return !out;
  });
  return out;
}
