// What the gate answers for a string: the plan of each allowed statement (masks, origins, effects), or the refusal.
import type { Catalog } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import type { ConnectionKind, Decision, Refusal } from '../policy/decision-types.js';
import type { RewrittenSql } from '../rewrite/rewrite-sql.js';
import type { Analysis, ColumnOrigin, SessionEffect, StatementAnalysis } from '../sql/analysis-types.js';

/** decide() of src/policy (DESIGN.md "Decision"), injected so the proxy does not re-implement it. */
export type Decider = (
  analysis: Analysis,
  roles: readonly string[],
  ctx: {
    config: Config;
    connection: ConnectionKind;
    database: string;
    catalog: Catalog;
    seeChecks?: boolean;
    rewrite?: boolean;
  },
) => Decision;

/**
 * What the relay does with one statement's replies: which result columns to mask, whether to
 * redact errors, which RowDescription origins to expect, and the session effects to apply when
 * the statement completes.
 */
export interface StatementPlan {
  readonly statement: StatementAnalysis;
  /**
   * The statement whose rows this one returns, when it is not `statement` itself: what an EXECUTE
   * runs (its PREPAREd statement) or a FETCH reads (its DECLAREd cursor). Its result columns are
   * the ones `mask` and `origins` index.
   */
  readonly rows?: StatementAnalysis;
  /** 0-based result column indexes that come back as `*****`. */
  readonly mask: ReadonlySet<number>;
  /**
   * The result columns the decision masks, when the rewrite masks them upstream (mask at read) and
   * `mask` is empty: what the audit and the metrics report as masked.
   */
  readonly maskedAtRead?: ReadonlySet<number>;
  readonly redact: boolean;
  /** Predicted origins, one per result column, or null when the statement returns no rows we can predict. */
  readonly origins: readonly ColumnOrigin[] | null;
  readonly effects: readonly SessionEffect[];
  /** DDL, other MANAGE statements and those that need MANAGE for the user code they run (gate-decision.ts mayChangeCatalog): the catalog is read again once they complete. */
  readonly changesCatalog: boolean;
  /** The version of the catalog the statement was analyzed with. */
  readonly catalogVersion: number;
  /**
   * Whether a RowDescription origin is a column hidden from the caller (mask at read: such a
   * column never arrives unmasked; one that does is refused, never sent). Absent: the caller
   * sees everything.
   */
  readonly hiddenOrigin?: (tableOid: number, attnum: number) => boolean;
  /**
   * How the text the statement went up in maps back to the caller's (errors about it are mapped
   * back): positions and generated names. Its `text` may be another text of the same lexical key
   * (a plan is shared by them, gate-memo.ts): the text sent is the GateResult's `sent`.
   */
  readonly sent?: Pick<RewrittenSql, 'positions' | 'names'>;
}

/**
 * The gate's answer for a whole string. `rest`, when set, is the part of the string the gate
 * could not decide yet because it uses what the decided part creates (issue 15): the text to
 * gate once `plans` have run inside the string's transaction, the decided part blanked out so
 * that positions stay those of the whole string.
 * `sent`: the rewritten text to send instead of `head` or the whole string (mask at read).
 */
export type GateResult =
  | {
      readonly ok: true;
      readonly plans: readonly StatementPlan[];
      readonly catalog: Catalog;
      /** With `rest`: the text to send now, the string up to where `rest` starts. */
      readonly head?: string;
      readonly rest?: string;
      /** With `rest`: whether the string controls transactions itself (it then runs in stages only as the client's block). */
      readonly controls?: boolean;
      /** With `rest`: what the rest is refused with under the catalog the head was decided with (for a string that cannot run in stages). */
      readonly refusal?: Refusal;
      readonly sent?: RewrittenSql;
    }
  | { readonly ok: false; readonly refusal: Refusal; readonly statement?: StatementAnalysis };
