// The refusal the query analysis throws when it cannot vouch for a statement (fail closed).
import type { AnalysisRefusal } from '../analysis-types.js';

/**
 * Thrown anywhere inside the query analysis; analyzeQuery turns it into `QueryResult.refusal`.
 * `sqlstate` is the code Postgres itself would raise for the same statement (42703 undefined
 * column, 42P01 undefined table, 42702 ambiguous column, 42883 undefined function, 42601 syntax)
 * or 0A000 for a construct the analysis has no rule for. `location` is a byte offset as libpg-query
 * reports it (the caller converts it to characters).
 */
export class QueryRefusal extends Error {
  constructor(
    readonly sqlstate: string,
    message: string,
    readonly location?: number,
    readonly hint?: string,
  ) {
    super(message);
  }

  /** The AnalysisRefusal value for this error. */
  toRefusal(): AnalysisRefusal {
    return {
      sqlstate: this.sqlstate,
      message: this.message,
      ...(this.location !== undefined && this.location >= 0 ? { location: this.location } : {}),
      ...(this.hint ? { hint: this.hint } : {}),
    };
  }
}

/** Throws 0A000 for a node kind or construct without a rule (the analysis never passes one silently). */
export function unsupported(what: string, location?: number): never {
  throw new QueryRefusal('0A000', `pgwarden cannot analyze ${what}`, location);
}
