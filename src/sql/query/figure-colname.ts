// The result column name Postgres gives an expression without AS (FigureColname in parse_target.c).
import { list, names, type Obj, str, unwrap } from './node-kinds.js';

/** Name and strength: 2 for a name taken from a column, function or keyword, 1 for a type name, 0 for none. */
function figure(node: unknown): [string | null, number] {
  if (!node) return [null, 0];
  const [kind, b] = unwrap(node);
  switch (kind) {
    case 'ColumnRef': {
      const fields = list(b.fields);
      for (let i = fields.length - 1; i >= 0; i--) {
        const [k, fb] = unwrap(fields[i]);
        if (k === 'String') return [str(fb.sval), 2];
      }
      return [null, 0];
    }
    case 'A_Indirection': {
      const ind = list(b.indirection);
      for (let i = ind.length - 1; i >= 0; i--) {
        const [k, ib] = unwrap(ind[i]);
        if (k === 'String') return [str(ib.sval), 2];
      }
      return figure(b.arg);
    }
    case 'FuncCall': {
      const n = names(b.funcname);
      return [n[n.length - 1] ?? null, 2];
    }
    case 'A_Expr':
      return str(b.kind) === 'AEXPR_NULLIF' ? ['nullif', 2] : [null, 0];
    case 'TypeCast': {
      const [n, s] = figure(b.arg);
      if (s >= 2) return [n, s];
      const tn = names((b.typeName as Obj | undefined)?.names);
      const last = tn[tn.length - 1];
      return last ? [last, 1] : [n, s];
    }
    case 'CollateClause':
      return figure(b.arg);
    case 'SubLink': {
      const t = str(b.subLinkType);
      if (t === 'EXISTS_SUBLINK') return ['exists', 2];
      if (t === 'ARRAY_SUBLINK') return ['array', 2];
      if (t === 'EXPR_SUBLINK' || t === 'MULTIEXPR_SUBLINK') {
        const [, sb] = unwrap(b.subselect);
        const first = list(sb.targetList)[0];
        if (first) {
          const [, rt] = unwrap(first);
          if (typeof rt.name === 'string') return [rt.name, 2];
          return figure(rt.val);
        }
      }
      return [null, 0];
    }
    case 'CaseExpr': {
      const [n, s] = figure(b.defresult);
      return s >= 1 ? [n, s] : ['case', 1];
    }
    case 'A_ArrayExpr':
      return ['array', 2];
    case 'RowExpr':
      return ['row', 2];
    case 'CoalesceExpr':
      return ['coalesce', 2];
    case 'MinMaxExpr':
      return [str(b.op) === 'IS_LEAST' ? 'least' : 'greatest', 2];
    case 'SQLValueFunction':
      return [SVF_NAMES[str(b.op)] ?? null, 2];
    case 'XmlExpr':
      return [XML_NAMES[str(b.op)] ?? null, 2];
    case 'XmlSerialize':
      return ['xmlserialize', 2];
    case 'GroupingFunc':
      return ['grouping', 2];
    default:
      return [null, 0];
  }
}

const SVF_NAMES: Record<string, string> = {
  SVFOP_CURRENT_DATE: 'current_date',
  SVFOP_CURRENT_TIME: 'current_time',
  SVFOP_CURRENT_TIME_N: 'current_time',
  SVFOP_CURRENT_TIMESTAMP: 'current_timestamp',
  SVFOP_CURRENT_TIMESTAMP_N: 'current_timestamp',
  SVFOP_LOCALTIME: 'localtime',
  SVFOP_LOCALTIME_N: 'localtime',
  SVFOP_LOCALTIMESTAMP: 'localtimestamp',
  SVFOP_LOCALTIMESTAMP_N: 'localtimestamp',
  SVFOP_CURRENT_ROLE: 'current_role',
  SVFOP_CURRENT_USER: 'current_user',
  SVFOP_USER: 'user',
  SVFOP_SESSION_USER: 'session_user',
  SVFOP_CURRENT_CATALOG: 'current_catalog',
  SVFOP_CURRENT_SCHEMA: 'current_schema',
};

const XML_NAMES: Record<string, string> = {
  IS_XMLCONCAT: 'xmlconcat',
  IS_XMLELEMENT: 'xmlelement',
  IS_XMLFOREST: 'xmlforest',
  IS_XMLPARSE: 'xmlparse',
  IS_XMLPI: 'xmlpi',
  IS_XMLROOT: 'xmlroot',
  IS_XMLSERIALIZE: 'xmlserialize',
  IS_DOCUMENT: '?column?',
};

/**
 * The name of a result column written without AS: the column, field or function name, a
 * keyword (`case`, `exists`, `coalesce`), the target type of a cast, else `?column?`.
 * Source: PostgreSQL FigureColname.
 */
export function figureColname(node: unknown): string {
  return figure(node)[0] ?? '?column?';
}
