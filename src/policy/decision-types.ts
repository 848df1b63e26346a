// The Decision value: what the proxy does with an analyzed SQL string for one set of roles.
import type { CatalogRelation } from '../catalog/types.js';
import type { Action } from '../sql/analysis-types.js';

/** Who holds the credentials (seed 004, "Databases nobody has written a rule for"). */
export type ConnectionKind = 'local' | 'proxified' | 'mcp';

/** A rule of the config, named for messages and the audit: `roles.<role>.permissions[<index>]`. */
export interface RuleRef {
  readonly role: string;
  readonly index: number;
  readonly effect: 'allow' | 'deny';
  /** The rule's scope as written, e.g. `demo.public.users.email` or `*`. */
  readonly scope: string;
}

/**
 * A refusal as the client will see it (DESIGN.md "Decision": ErrorResponse 42501 or the code
 * Postgres itself would use). `position` is 1-based in characters of the whole SQL string, as
 * ErrorResponse's POSITION field is.
 */
export interface Refusal {
  readonly sqlstate: string;
  readonly message: string;
  readonly detail?: string;
  readonly hint?: string;
  readonly position?: number;
  /** The rule that refused (a deny), when one did; absent for default deny and analysis refusals. */
  readonly rule?: RuleRef;
  /**
   * `schema.table.column` of the catalog column the refused requirement or use names (metrics);
   * absent when none does (an unknown name is refused by the analysis, without one).
   */
  readonly column?: string;
}

/** The requirement checks that decided a statement, for `pgwarden check` and the audit. */
export interface RequirementVerdict {
  readonly action: Action | 'SEE';
  /** `database`, `schema.table` or `schema.table.column`. */
  readonly object: string;
  readonly granted: boolean;
  readonly rule?: RuleRef;
  /** For a SEE check of a column hidden because it carries a hidden column's rows: which (hidden-columns.ts). */
  readonly carries?: string;
}

/** The decision for one statement of the string. */
export type StatementDecision =
  | {
      readonly verdict: 'allow';
      /** 0-based result column indexes whose values come back as `*****`. */
      readonly mask: readonly number[];
      /**
       * True when the statement touches a table with a column hidden from the caller: every
       * ErrorResponse then loses DETAIL, and class-22 messages become the condition name
       * (DESIGN.md "Error redaction").
       */
      readonly redactErrors: boolean;
      readonly checks: readonly RequirementVerdict[];
      /**
       * For PREPARE and DECLARE … CURSOR: the decision of the statement they hold, whose mask applies
       * to the rows EXECUTE and FETCH return later (keep it by the statement's or cursor's name).
       */
      readonly prepared?: StatementDecision;
    }
  | { readonly verdict: 'refuse'; readonly refusal: Refusal; readonly checks: readonly RequirementVerdict[] };

/** The decision for a whole SQL string: one refused statement refuses the string. */
export interface Decision {
  readonly statements: readonly StatementDecision[];
  /** The first refusal, when any statement (or the analysis) is refused. */
  readonly refusal?: Refusal;
  /**
   * Set when the string is allowed and the caller does not see everything in the database: the
   * columns of a relation hidden from the caller (empty set: none), which the mask-at-read rewrite
   * masks at their source (DESIGN.md "Three walls", wall 2). Absent: the text is sent as written.
   */
  readonly hiddenOf?: (rel: CatalogRelation) => ReadonlySet<string>;
}
