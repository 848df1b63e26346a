// Result replies: RowDescription checked against the predicted origins and masked, DataRow masked, CommandComplete's effects applied.
import { errorResponse } from '../wire/error-fields.js';
import type { Frame } from '../wire/framer.js';
import { sliceCodePoints } from './code-points.js';
import { hiddenOriginColumn, maskDataRow, maskRowDescription, originMismatch } from './masking.js';
import { SCRATCH_BYTES } from './relay-core.js';
import { InBandCatalogRelay } from './relay-in-band-catalog.js';
import type { StatementPlan } from './statement-plan.js';

/**
 * The last RowDescription payload each plan accepted (a copy) and what went to the client for it
 * (absent: the message as it came): plans are shared by the executions of a statement.
 */
const checkedRowDescriptions = new WeakMap<
  StatementPlan,
  { readonly payload: Buffer; readonly out?: Buffer }
>();

/**
 * Whether the statement commits a transaction (COMMIT, END, COMMIT AND CHAIN, COMMIT PREPARED):
 * its catalog changes are every session's from its CommandComplete on (relay-simple-query.ts
 * cuts a string after it; relay-extended-execute.ts has it flushed at once).
 */
export function commits(plan: StatementPlan): boolean {
  return (
    plan.effects.some((e) => e.kind === 'commit') ||
    (plan.statement.nodeType === 'TransactionStmt' && plan.statement.kind === 'MANAGE')
  );
}

/**
 * Whether the statement is PREPARE TRANSACTION (two-phase commit): it ends the session's
 * transaction without committing it; a COMMIT PREPARED, from any session, commits it later.
 */
export function preparesTransaction(plan: StatementPlan): boolean {
  return (
    plan.statement.nodeType === 'TransactionStmt' &&
    plan.statement.requirements.some((r) => r.reason === 'PREPARE TRANSACTION')
  );
}

/**
 * The refusal of a PREPARE TRANSACTION of a transaction that changed the catalog (0A000
 * feature_not_supported): its COMMIT PREPARED would publish the change with no commit fence (the
 * committing session changed nothing itself, and the prepared transaction's locks belong to no
 * session), so a statement decided under the old definitions and waiting on those locks would run
 * under the new ones. The transaction stays open, failed: ROLLBACK it, then run it with COMMIT.
 */
export const PREPARED_DDL_REFUSAL = {
  sqlstate: '0A000',
  message:
    'pgwarden cannot prepare a transaction that changed the catalog for two-phase commit: COMMIT PREPARED would publish its change without the commit fence',
  hint: 'Roll it back and run the change in a transaction that ends with COMMIT.',
} as const;

/**
 * What the relay does with a statement's result, whichever protocol ran it: masks hidden columns,
 * refuses a RowDescription the analysis did not predict, and on CommandComplete records the
 * statement's effects (prepared statements, cursors, search_path) and audits it.
 */
export abstract class ResultRelay extends InBandCatalogRelay {
  /**
   * Memory for rewritten rows, handed out front to back and never reused: consecutive masked
   * rows land side by side, so they leave as one write (a queued write still holds its range).
   */
  private scratch = Buffer.alloc(0);
  private scratchAt = 0;
  private readonly carve = (bytes: number): Buffer => {
    if (this.scratchAt + bytes > this.scratch.length) {
      this.scratch = Buffer.allocUnsafe(Math.max(SCRATCH_BYTES, bytes));
      this.scratchAt = 0;
    }
    const out = this.scratch.subarray(this.scratchAt, this.scratchAt + bytes);
    this.scratchAt += bytes;
    return out;
  };

  protected rowDescription(plan: StatementPlan | null, f: Frame): Buffer {
    if (!plan) return f.bytes;
    // The checks below are a function of the payload and the plan alone: the same payload for
    // the same plan (the statement run again) passed them already.
    const known = checkedRowDescriptions.get(plan);
    if (known?.payload.equals(f.payload)) return known.out ?? f.bytes;
    if (plan.origins) {
      const why = originMismatch(f.payload, plan.origins);
      if (why) {
        this.o.invalidateCatalog();
        this.o.log.warn({ event: 'origin-mismatch', why }, 'RowDescription disagrees with the analysis');
        const refusal = errorResponse({
          severity: 'ERROR',
          code: '42501',
          message: `pgwarden refused the result: ${why} (the schema changed since pgwarden read it)`,
          hint: 'Run the statement again: pgwarden has re-read the catalog.',
        });
        this.discarding = true;
        return refusal;
      }
    }
    if (plan.hiddenOrigin) {
      const why = hiddenOriginColumn(f.payload, plan.hiddenOrigin, plan.mask);
      if (why) {
        this.o.invalidateCatalog();
        this.o.log.error({ event: 'hidden-origin', why }, 'a hidden column arrived unmasked; rows not sent');
        this.discarding = true;
        return errorResponse({
          severity: 'ERROR',
          code: '42501',
          message: `pgwarden refused the result: ${why}`,
          hint: 'Run the statement again: pgwarden has re-read the catalog.',
        });
      }
    }
    const out = plan.mask.size > 0 ? maskRowDescription(f.payload, plan.mask) : undefined;
    checkedRowDescriptions.set(plan, { payload: Buffer.from(f.payload), ...(out ? { out } : {}) });
    return out ?? f.bytes;
  }

  /**
   * True when the RowDescription whose payload is `chunk[start, end)` goes to the client as it came
   * for `plan` without a check: no plan, or the same payload this plan accepted last, unmasked (what
   * {@link rowDescription} returns then is the message itself).
   */
  protected rowDescriptionAsIs(
    plan: StatementPlan | null,
    chunk: Buffer,
    start: number,
    end: number,
  ): boolean {
    if (!plan) return true;
    const known = checkedRowDescriptions.get(plan);
    return (
      known !== undefined &&
      known.out === undefined &&
      known.payload.length === end - start &&
      known.payload.compare(chunk, start, end) === 0
    );
  }

  protected dataRow(plan: StatementPlan | null, f: Frame): Buffer {
    return plan && plan.mask.size > 0 ? maskDataRow(f.bytes, plan.mask, this.carve) : f.bytes;
  }

  protected completed(
    plan: StatementPlan | null,
    sql: string,
    started: number,
    tag: string,
    sent?: number,
  ): void {
    if (!plan) return;
    this.applyEffects(plan, sql);
    // Committed now, whatever follows in the message: other sessions must not analyze with the
    // catalog (nor run under the grants) from before it until its ReadyForQuery.
    if (commits(plan)) this.o.committed?.();
    // ROLLBACK TO SAVEPOINT may undo DDL: a catalog read inside the transaction before it is stale.
    if (plan.changesCatalog || plan.effects.some((e) => e.kind === 'rollback-to')) this.o.invalidateCatalog();
    this.auditDone(plan, sql, started, tag, sent);
  }

  private applyEffects(plan: StatementPlan, sql: string): void {
    const names = this.o.gateSession.names;
    const paths = this.o.gateSession.paths;
    // The PREPARE is recorded under the path it was analyzed with, before this statement's own effects.
    const pathVersion = paths.version;
    paths.completed(plan.effects);
    for (const e of plan.effects) {
      switch (e.kind) {
        case 'prepare':
          names.prepared.set(e.name, {
            inner: e.inner,
            text: sliceCodePoints(sql, plan.statement.location, plan.statement.length),
            pathVersion,
            catalogVersion: plan.catalogVersion,
          });
          // Protocol-level and SQL-level prepared statements are one namespace upstream.
          this.statements.delete(e.name);
          break;
        case 'deallocate':
          // DEALLOCATE drops protocol-level prepared statements too (one namespace in Postgres).
          if (e.name === null) {
            names.prepared.clear();
            this.statements.clear();
            this.inBandStatementsDropped();
          } else {
            names.prepared.delete(e.name);
            this.statements.delete(e.name);
          }
          break;
        case 'declare-cursor':
          // Portals and cursors are one namespace upstream: the protocol portal of that name is gone.
          names.cursors.set(e.name, e.inner);
          this.portals.delete(e.name);
          break;
        case 'close-cursor':
          if (e.name === null) {
            names.cursors.clear();
            this.portals.clear();
          } else {
            names.cursors.delete(e.name);
            this.portals.delete(e.name);
          }
          break;
        case 'discard-all':
          this.inBandStatementsDropped();
          names.prepared.clear();
          names.cursors.clear();
          this.statements.clear();
          this.portals.clear();
          break;
        default:
          break;
      }
    }
  }
}
