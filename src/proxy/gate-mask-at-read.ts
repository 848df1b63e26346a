// Mask at read in the gate: the decided string's rewritten text, and the plans its rows need then.
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import type { Decision } from '../policy/decision-types.js';
import { catalogIndex } from '../policy/hidden-columns.js';
import type { RewriteCache } from '../rewrite/rewrite-cache.js';
import { rewriteSql } from '../rewrite/rewrite-sql.js';
import { isRewritten } from '../rewrite/tree-walk.js';
import type { Analysis } from '../sql/analysis-types.js';
import { loadedParser, majorOfServerVersion } from '../sql/parser.js';
import type { GateResult, StatementPlan } from './statement-plan.js';

/**
 * Applies mask at read (DESIGN.md "Three walls", wall 2) to a decided string: the text to send
 * (rewriteSql, cached per decision and text) and the plans with it — a rewritten statement's rows
 * arrive masked and pass as raw bytes (no wire mask); EXECUTE and FETCH run text prepared earlier
 * (perhaps under another policy) and keep theirs; every plan refuses a RowDescription origin that
 * is a hidden column. Input: the caller's text, its analysis and decision, the decision's
 * `hiddenOf`, the plans, the catalog, the server's rewrite cache, and the text's UTF-8 bytes when
 * the caller has them (RewriteContext.utf8). Output: the gate's result, or
 * a refusal (0A000 for a construct the rewrite cannot wrap, XX000 for a failed self-check).
 */
export function maskAtRead(
  sql: string,
  analysis: Analysis,
  decision: Decision,
  hiddenOf: (rel: CatalogRelation) => ReadonlySet<string>,
  plans: readonly StatementPlan[],
  catalog: Catalog,
  rewrites: RewriteCache | undefined,
  utf8?: Buffer,
): GateResult {
  const parser = loadedParser(majorOfServerVersion(catalog.serverVersionNum));
  if (!parser)
    return { ok: false, refusal: { sqlstate: '0A000', message: 'no parser for this server version' } };
  const make = () =>
    rewriteSql(sql, analysis.statements, {
      catalog,
      hiddenOf,
      parse: (t) => parser.parse(t),
      ...(utf8 ? { utf8 } : {}),
    });
  const sent = rewrites ? rewrites.get(decision, sql, make) : make();
  if ('refusal' in sent) {
    const r = sent.refusal;
    return {
      ok: false,
      refusal: {
        sqlstate: r.sqlstate,
        message: r.message,
        ...(r.hint ? { hint: r.hint } : {}),
        ...(r.location !== undefined ? { position: r.location + 1 } : {}),
      },
    };
  }
  const hiddenOrigin = originCheck(catalog, hiddenOf);
  // A plan keeps what maps the upstream's error positions back, not the text: plans live until
  // their statement completes, and a rewritten 60 MB text held meanwhile was outside the memory
  // budget (issue 16 item 2).
  const extra = sent.changed
    ? { hiddenOrigin, sent: { positions: sent.positions, names: sent.names } }
    : { hiddenOrigin };
  const masked = plans.map((p) =>
    isRewritten(p.statement.nodeType, {})
      ? { ...p, ...extra, mask: new Set<number>(), ...(p.mask.size > 0 ? { maskedAtRead: p.mask } : {}) }
      : { ...p, ...extra },
  );
  return sent.changed ? { ok: true, plans: masked, catalog, sent } : { ok: true, plans: masked, catalog };
}

/** Whether (table OID, attnum) of a RowDescription is a column `hiddenOf` hides. */
function originCheck(
  catalog: Catalog,
  hiddenOf: (rel: CatalogRelation) => ReadonlySet<string>,
): (tableOid: number, attnum: number) => boolean {
  const index = catalogIndex(catalog);
  return (tableOid, attnum) => {
    const rel = index.byOid.get(tableOid);
    if (!rel) return false;
    const col = rel.columns.find((c) => c.attnum === attnum);
    return col !== undefined && hiddenOf(rel).has(col.name);
  };
}
