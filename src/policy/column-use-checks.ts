// Step 2 of a decision: SEE per column use of one statement (masks, refusals naming the column and clause, writes as reads).
import type { CatalogConstraint } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import type { ColumnUse, StatementAnalysis, TestClause } from '../sql/analysis-types.js';
import type { DecideContext } from './decide-context.js';
import type { Refusal, RequirementVerdict } from './decision-types.js';
import type { ColumnVisibility, HiddenColumns } from './hidden-columns.js';
import { deniedDetail, fullName, position, rolesSentence, shortName } from './refusal-messages.js';
import { generatedOracles, rowCheckMessage, rowCheckOracles } from './row-checks.js';

/**
 * A refusal found while deciding one statement, with the offset it points at for ordering: the
 * earliest `at` is the statement's refusal (requirement refusals use negative offsets, so they come first).
 */
export interface Pending {
  readonly at: number;
  readonly refusal: Refusal;
}

/** How a message names constraint `c`: `CHECK constraint c1`, `unique index u1`, `partition key of parted`. */
function constraintNoun(c: CatalogConstraint): string {
  if (c.kind === 'check') return `CHECK constraint ${c.name}`;
  if (c.kind === 'partition') return `partition key of ${c.name}`;
  return `${c.kind} index ${c.name}`;
}

/** Where a `test` use asks its question, as the message says it: "tested in WHERE", "in a JOIN ON". */
function clauseText(clause: TestClause): string {
  if (clause === 'SET OPERATION') return 'a set operation (UNION, INTERSECT or EXCEPT)';
  if (clause === 'CASE') return 'a CASE condition';
  if (clause === 'LIMIT') return 'LIMIT or OFFSET';
  return clause;
}

/** DETAIL for a hidden column: the generated-from chain, the roles, and the SEE rule (or its absence). */
function hiddenDetail(
  ctx: DecideContext,
  roles: readonly string[],
  schema: string,
  table: string,
  column: string,
  vis: ColumnVisibility,
  hidden: HiddenColumns,
): string {
  if (vis.generatedFrom !== undefined) {
    const from = hidden.column(schema, table, vis.generatedFrom);
    return `Column ${shortName(schema, table, column)} is generated from ${shortName(schema, table, vis.generatedFrom)}, which is hidden. ${hiddenDetail(ctx, roles, schema, table, vis.generatedFrom, from, hidden)}`;
  }
  const name = fullName(ctx.database, { level: 'column', schema, table, column });
  if (vis.carries !== undefined && vis.see.granted) {
    return `Column ${shortName(schema, table, column)} carries ${vis.carries}, which is hidden from you: a column is hidden in every relation whose rows carry it.`;
  }
  if (vis.see.rule?.effect === 'deny') return deniedDetail(ctx.config, roles, 'SEE', name, vis.see.rule);
  return `${rolesSentence(roles)} No rule of ${roles.length === 1 ? 'it' : 'them'} allows SEE on ${name}, so its values are hidden.`;
}

/**
 * Step 2 of DESIGN.md "Decision" for statement `s` under `roles`: every column use checked for SEE
 * against `hidden`. Appends a SEE verdict per distinct column to `checks`, an `output k` use of a hidden
 * column (or a result column traced to one) to `mask`, and to `pending` a 42501 refusal for each `test`,
 * `compute` or `whole-row` use of a hidden column and each write that would answer a question about
 * hidden values ("Writes as reads": unique constraints, unique/exclusion indexes, CHECKs and partition
 * keys reading a hidden column, foreign keys to or from hidden columns, triggers and row-level security
 * policies over rows with a hidden column, row-checks.ts). Never throws.
 */
export function checkUses(
  s: StatementAnalysis,
  roles: readonly string[],
  ctx: DecideContext,
  hidden: HiddenColumns,
  checks: RequirementVerdict[],
  pending: Pending[],
  mask: Set<number>,
): void {
  const seen = new Set<string>();
  const see = (schema: string, table: string, column: string): ColumnVisibility => {
    const vis = hidden.column(schema, table, column);
    const name = fullName(ctx.database, { level: 'column', schema, table, column });
    if (!seen.has(name)) {
      seen.add(name);
      checks.push({
        action: 'SEE',
        object: name,
        granted: !vis.hidden,
        ...(vis.see.rule ? { rule: vis.see.rule } : {}),
        ...(vis.hidden && vis.carries ? { carries: vis.carries } : {}),
      });
    }
    return vis;
  };
  const refuse = (
    use: ColumnUse,
    message: string,
    detail: string,
    hint: string | undefined,
    vis?: ColumnVisibility,
  ) => {
    const pos = position(use.location);
    const rule = vis?.see.rule?.effect === 'deny' ? vis.see.rule : undefined;
    pending.push({
      at: use.location,
      refusal: {
        sqlstate: '42501',
        message,
        detail,
        ...(hint !== undefined ? { hint } : {}),
        ...(pos !== undefined ? { position: pos } : {}),
        ...(rule ? { rule } : {}),
        ...(use.use !== 'whole-row' ? { column: `${use.schema}.${use.table}.${use.column}` } : {}),
      },
    });
  };

  /**
   * Writes as reads through constraints (DESIGN.md "Writes as reads", attack corpus 2): a write to
   * any column of a unique or exclusion index that also reads a hidden column (a composite key, an
   * expression, a partial-index predicate) succeeds or fails on the hidden values of other rows;
   * an UPDATE of a column a CHECK constraint reads together with a hidden column succeeds or fails
   * on the row's hidden value. Either answers a question about hidden values: refused.
   */
  // ON CONFLICT DO UPDATE (it needs UPDATE) checks the existing row's CHECK constraints too.
  const updatesRows = s.kind !== 'INSERT' || s.requirements.some((r) => r.action === 'UPDATE');
  const constraintOracle = (use: ColumnUse & { use: 'write-target' }, _kind: string) => {
    const rel = ctx.catalog.relations.get(catalogKey(use.schema, use.table));
    for (const c of rel?.constraints ?? []) {
      // Triggers and policies run whichever columns are written (row-checks.ts).
      if (c.kind === 'trigger' || c.kind === 'policy') continue;
      // A generated column in the constraint reads the columns it is computed from.
      const cols = new Set(c.columns);
      for (const name of c.columns) {
        for (const from of rel?.columns.find((x) => x.name === name)?.generatedFrom ?? []) cols.add(from);
      }
      if (!cols.has(use.column)) continue;
      // A plain INSERT's CHECK and partition routing read only the new row.
      if ((c.kind === 'check' || c.kind === 'partition') && !updatesRows) continue;
      const ref = c.references;
      if (ref) {
        // A foreign key onto a hidden key: the write succeeds exactly when the value exists there.
        const hiddenRef = ref.columns.find((x) => hidden.column(ref.schema, ref.table, x).hidden);
        if (hiddenRef) {
          const vis = hidden.column(ref.schema, ref.table, hiddenRef);
          refuse(
            use,
            `column ${shortName(use.schema, use.table, use.column)} cannot be written: its foreign key ${c.name} references ${shortName(ref.schema, ref.table, hiddenRef)}, which is hidden from you, so the write would tell whether a value exists there`,
            hiddenDetail(ctx, roles, ref.schema, ref.table, hiddenRef, vis, hidden),
            undefined,
            vis,
          );
          return;
        }
      }
      const other = [...cols].find((x) => x !== use.column && hidden.column(use.schema, use.table, x).hidden);
      if (!other) continue;
      const vis = hidden.column(use.schema, use.table, other);
      refuse(
        use,
        `column ${shortName(use.schema, use.table, use.column)} cannot be written: the ${constraintNoun(c)} also reads ${other}, which is hidden from you, so the write would tell something about its values`,
        hiddenDetail(ctx, roles, use.schema, use.table, other, vis, hidden),
        undefined,
        vis,
      );
      return;
    }
  };

  /**
   * Foreign keys of other relations whose referencing columns are hidden and that reference
   * `schema.table`: updating or deleting a referenced key fails (23503) exactly when a hidden
   * value points at it.
   */
  const inboundHidden = (schema: string, table: string) => {
    const out: { from: string; column: string; constraint: string; keys: readonly string[] }[] = [];
    for (const rel of ctx.catalog.relations.values()) {
      for (const c of rel.constraints ?? []) {
        if (c.references?.schema !== schema || c.references.table !== table) continue;
        // Any hidden column of the referencing table counts, not only the key's: a cascaded update
        // or delete there runs its CHECKs and unique indexes, and its errors print the row.
        const h =
          c.columns.find((x) => hidden.column(rel.schema, rel.name, x).hidden) ??
          hidden.hiddenOf(rel.schema, rel.name)[0];
        if (h)
          out.push({
            from: `${rel.schema}.${rel.name}`,
            column: h,
            constraint: c.name,
            keys: c.references.columns,
          });
      }
    }
    return out;
  };
  for (const r of s.requirements) {
    if (r.action !== 'DELETE' || r.object.level !== 'table') continue;
    const inbound = inboundHidden(r.object.schema, r.object.table)[0];
    if (inbound) {
      const [fs, ft] = inbound.from.split('.') as [string, string];
      const vis = hidden.column(fs, ft, inbound.column);
      pending.push({
        at: r.location ?? s.location,
        refusal: {
          sqlstate: '42501',
          message: `rows of ${shortName(r.object.schema, r.object.table)} cannot be deleted: the foreign key ${inbound.constraint} of ${inbound.from}.${inbound.column}, which is hidden from you, references them, so a delete would tell whether a hidden value points at a row`,
          detail: hiddenDetail(ctx, roles, fs, ft, inbound.column, vis, hidden),
        },
      });
    }
  }

  // Triggers, policies and NOT VALID CHECKs run over every row a write changes (row-checks.ts).
  const isHidden = (sc: string, t: string, c: string) => hidden.column(sc, t, c).hidden;
  for (const o of rowCheckOracles(s, ctx.catalog, isHidden)) {
    const { schema, table } = o.columnOf;
    const vis = see(schema, table, o.column);
    const pos = position(o.location);
    pending.push({
      at: o.location ?? s.location,
      refusal: {
        sqlstate: '42501',
        message: rowCheckMessage(o),
        detail: hiddenDetail(ctx, roles, schema, table, o.column, vis, hidden),
        ...(pos !== undefined ? { position: pos } : {}),
        ...(vis.see.rule?.effect === 'deny' ? { rule: vis.see.rule } : {}),
        column: `${schema}.${table}.${o.column}`,
      },
    });
  }
  // A generated column computed again over a hidden input when another input is updated.
  for (const o of generatedOracles(s, ctx.catalog, isHidden, updatesRows)) {
    const vis = see(o.relation.schema, o.relation.name, o.column);
    refuse(
      o.use,
      `column ${shortName(o.use.schema, o.use.table, o.use.column)} cannot be updated: the generated column ${o.generated} of ${shortName(o.relation.schema, o.relation.name)} is computed again from it and from ${o.column}, which is hidden from you, so the update's success would tell something about its values`,
      hiddenDetail(ctx, roles, o.relation.schema, o.relation.name, o.column, vis, hidden),
      undefined,
      vis,
    );
  }

  for (const use of s.uses) {
    if (use.use === 'write-target' && updatesRows) {
      const inbound = inboundHidden(use.schema, use.table).find((x) => x.keys.includes(use.column));
      if (inbound) {
        const [fs, ft] = inbound.from.split('.') as [string, string];
        const vis = hidden.column(fs, ft, inbound.column);
        refuse(
          use,
          `column ${shortName(use.schema, use.table, use.column)} cannot be updated: the foreign key ${inbound.constraint} of ${inbound.from}.${inbound.column}, which is hidden from you, references it, so the update would tell whether a hidden value points at the row`,
          hiddenDetail(ctx, roles, fs, ft, inbound.column, vis, hidden),
          undefined,
          vis,
        );
      }
    }
    if (use.use === 'whole-row') {
      const cols = hidden.hiddenOf(use.schema, use.table);
      for (const c of cols) see(use.schema, use.table, c);
      if (cols.length === 0) continue;
      const first = cols[0]!;
      const firstVis = hidden.column(use.schema, use.table, first);
      refuse(
        use,
        `table ${shortName(use.schema, use.table)} has columns hidden from you (${cols.join(', ')}) and cannot be used as a whole row`,
        hiddenDetail(ctx, roles, use.schema, use.table, first, firstVis, hidden),
        'List the columns you need instead of the whole row: hidden ones come back masked.',
        firstVis,
      );
      continue;
    }
    const vis = see(use.schema, use.table, use.column);
    if (use.use === 'write-target') constraintOracle(use, s.kind);
    if (!vis.hidden) continue;
    const col = shortName(use.schema, use.table, use.column);
    const detail = hiddenDetail(ctx, roles, use.schema, use.table, use.column, vis, hidden);
    switch (use.use) {
      case 'output':
        mask.add(use.outputIndex);
        break;
      case 'write-target': {
        const c = ctx.catalog.relations
          .get(catalogKey(use.schema, use.table))
          ?.columns.find((x) => x.name === use.column);
        if (c?.unique) {
          refuse(
            use,
            `column ${col} is hidden from you and cannot be written: it is under a unique constraint, so the write would tell whether a value exists`,
            detail,
            undefined,
            vis,
          );
        }
        break;
      }
      case 'test':
        refuse(
          use,
          `column ${col} is hidden from you and cannot be tested in ${clauseText(use.clause)}`,
          detail,
          use.clause === 'WHERE'
            ? `To ask only whether rows exist, write EXISTS (SELECT 1 FROM …) without ${use.column}; testing its values needs SEE on it.`
            : `Leave ${use.column} out of ${clauseText(use.clause)}; ${clauseText(use.clause)} reads its values, which needs SEE on it.`,
          vis,
        );
        break;
      case 'compute':
        refuse(
          use,
          `column ${col} is hidden from you and cannot be read in ${use.context}`,
          detail,
          use.context.startsWith('EXPLAIN')
            ? `EXPLAIN shows what the statement outputs (widths, sort memory): explain it without ${use.column}.`
            : `Select ${use.column} on its own to get it masked, or leave it out; computing on its values needs SEE on it.`,
          vis,
        );
        break;
    }
  }
  // A result column whose traced sources include a hidden column is masked too (defence in depth:
  // the output uses say the same).
  s.resultColumns.forEach((rc, k) => {
    if (rc.sources?.some((src) => hidden.column(src.schema, src.table, src.column).hidden)) mask.add(k);
  });
}
