// Types whose input runs user code, wherever a statement names one, and writes into columns of one.
import type { Catalog, CatalogType } from '../catalog/types.js';
import type { AnalysisRefusal, Requirement, StatementAnalysis } from './analysis-types.js';
import { effectivePath } from './query/catalog-names.js';

/** A TypeName found in a parse tree: its name parts and byte location. */
interface FoundType {
  readonly names: readonly string[];
  readonly location: number;
}

/** Every TypeName in `node` (casts, PREPARE parameter types, column definition lists, DDL, …). */
function typeNames(node: unknown): FoundType[] {
  const out: FoundType[] = [];
  const stack: unknown[] = [node];
  // One walk of the parse tree, pushing children in place (no entry arrays, no spread): it runs
  // for every statement analyzed (issue 18: 6% of the cold analysis of the 407-character CTE).
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (item !== null && typeof item === 'object') stack.push(item);
      }
      continue;
    }
    const o = v as Record<string, unknown>;
    for (const k in o) {
      const child = o[k];
      if (child === null || typeof child !== 'object') continue;
      // Value nodes hold no TypeName (a String's sval, an A_Const's ival / sval / fval / boolval).
      if (k === 'String' || k === 'A_Const') continue;
      if ((k === 'typeName' || k === 'TypeName') && !Array.isArray(child)) {
        const t = child as { names?: unknown; location?: number };
        const names = (Array.isArray(t.names) ? t.names : []).map(
          (n) => (n as { String?: { sval?: string } }).String?.sval ?? '',
        );
        if (names.length > 0) out.push({ names, location: typeof t.location === 'number' ? t.location : 0 });
      }
      stack.push(child);
    }
  }
  return out;
}

/**
 * Adds what the types a statement names need (DESIGN.md "Side channels": casts to domains whose
 * checks call user code need MANAGE; attack corpus 3: a composite type with a domain attribute, a
 * table row type, a column definition list, a PREPARE parameter type and an INSERT into a
 * domain-typed column all run the domain's CHECK too). Input: the analysis of one statement, its
 * parse node, the catalog, the search path in force and a byte→character offset converter.
 * Output: the analysis with a MANAGE requirement per such type or write, or refused 42704 when a
 * type the catalog does not know is named (it may be new: the proxy reads the catalog again and
 * retries). A catalog without `types` (an old fixture) adds nothing.
 */
export function withUserCodeTypes(
  analysis: StatementAnalysis,
  node: unknown,
  catalog: Catalog,
  searchPath: readonly string[] | null,
  toChar: (byte: number) => number,
): StatementAnalysis {
  const types = catalog.types;
  // MANAGE statements need MANAGE already, and DDL names types that do not exist yet (CREATE
  // TYPE) or writes function names where the grammar puts a TypeName (CREATE OPERATOR).
  if (!types || analysis.refusal || analysis.kind === 'MANAGE') return analysis;
  const extra: Requirement[] = [];
  for (const t of typeNames(node)) {
    const name = t.names[t.names.length - 1] as string;
    const schemas =
      t.names.length >= 2 ? [t.names[t.names.length - 2] as string] : effectivePath(searchPath ?? []);
    let found: CatalogType | undefined;
    for (const s of schemas) {
      found = types.get(`${s}.${name}`);
      if (found) break;
    }
    if (!found) {
      const refusal: AnalysisRefusal = {
        sqlstate: '42704',
        message: `type "${t.names.join('.')}" does not exist`,
        location: toChar(t.location),
      };
      return { ...analysis, refusal };
    }
    if (found.why !== null) {
      extra.push({
        action: 'MANAGE',
        object: { level: 'database' },
        reason: `type ${found.schema}.${found.name} (${found.why}: its input runs user code)`,
        location: toChar(t.location),
      });
    }
  }
  const oids = catalog.userCodeTypeOids;
  if (oids && oids.size > 0) {
    for (const u of analysis.uses) {
      const rel = catalog.relations.get(`${u.schema}.${u.table}`);
      if (u.use === 'whole-row') {
        // A row of such a table handed to a function (json_populate_record(t, …)) is rebuilt
        // through its column types' input: the statement names no type, the row carries them.
        const col = rel?.columns.find((c) => oids.has(c.typeOid));
        if (col) {
          extra.push({
            action: 'MANAGE',
            object: { level: 'database' },
            reason: `a row of ${u.table}, whose column ${col.name} has a type whose input runs user code`,
            location: u.location,
          });
        }
        continue;
      }
      if (u.use !== 'write-target' && u.use !== 'compute') continue;
      const col = rel?.columns.find((c) => c.name === u.column);
      if (col && oids.has(col.typeOid)) {
        extra.push({
          action: 'MANAGE',
          object: { level: 'database' },
          reason: `${u.use === 'write-target' ? 'write to' : 'computing with'} ${u.table}.${u.column}, whose type's input runs user code`,
          location: u.location,
        });
      }
    }
  }
  return extra.length === 0 ? analysis : { ...analysis, requirements: [...analysis.requirements, ...extra] };
}
