// The extended-protocol flow up to Describe: Parse and Bind decided, prepared statements and portals tracked.

import type { Catalog } from '../catalog/types.js';
import type { Refusal } from '../policy/decision-types.js';
import { type RewrittenSql, sentUtf8 } from '../rewrite/rewrite-sql.js';
import { isReservedStatementName, reservedStatementRefusal } from '../sql/reserved-statement-names.js';
import type { Frame } from '../wire/framer.js';
import { decodeBindNames, decodeDescribe, decodeParse } from '../wire/frontend.js';
import { parse as encodeParse } from '../wire/frontend-encode.js';
import { MapUndo, type PortalEntry, type PreparedEntry } from './expected-replies.js';
import { cursorPlan } from './gate-decision.js';
import { textToKeep } from './plan-audit.js';
import { PROBE_STATEMENT } from './relay-core.js';
import { LONG_TEXT } from './relay-simple-query.js';
import { StringControlRelay } from './relay-string-control.js';
import type { GateResult, StatementPlan } from './statement-plan.js';

/** The portal entry of each prepared statement's Binds (immutable, so its Binds share one). */
const portalEntries = new WeakMap<PreparedEntry, PortalEntry>();

/** Type OIDs of each catalog, for the parameter types of Parse. */
const typeOids = new WeakMap<Catalog, ReadonlySet<number>>();

/**
 * The first of `oids` that is neither 0 (unspecified) nor a type of `catalog`; undefined when all
 * are known, or when the catalog carries no types (nothing to check against).
 */
function unknownTypeOid(catalog: Catalog, oids: readonly number[]): number | undefined {
  if (oids.every((o) => o === 0) || !catalog.types) return undefined;
  let known = typeOids.get(catalog);
  if (!known) {
    known = new Set([...catalog.types.values()].map((t) => t.oid));
    typeOids.set(catalog, known);
  }
  return oids.find((o) => o !== 0 && !known.has(o));
}

/**
 * The extended query protocol (protocol "Extended Query"): a statement is decided at Parse and
 * again at Bind when the search_path or catalog changed; portals and SQL cursors share one
 * namespace; what the upstream skips after an error is put back.
 */
export abstract class ExtendedProtocolRelay extends StringControlRelay {
  /** The last rewritten Parse message made, and what it was made of (see rewrittenParse). */
  private lastRewrittenParse:
    | { sent: RewrittenSql; name: string; paramTypes: readonly number[]; bytes: Buffer }
    | undefined;

  protected parse(f: Frame): Promise<void> | undefined {
    const { name, sql, paramTypes } = decodeParse(f.payload);
    this.startBatch();
    if (name === PROBE_STATEMENT) {
      this.refuseExtended({
        sqlstate: '42501',
        message: 'this prepared statement name is reserved by pgwarden',
      });
      return undefined;
    }
    if (isReservedStatementName(name)) {
      this.refuseExtended(reservedStatementRefusal(name));
      return undefined;
    }
    // A long text's bytes are in the payload, between the name's NUL and its own.
    const at = sql.length > LONG_TEXT ? f.payload.indexOf(0) + 1 : 0;
    const utf8 = at > 0 ? f.payload.subarray(at, f.payload.indexOf(0, at)) : undefined;
    return this.withGate(
      sql,
      { bytes: f.bytes, start: 0, end: f.bytes.length, name, sql, paramTypes },
      this.parseAllowed,
      this.refuseExtended,
      utf8,
    );
  }

  /**
   * A Parse allowed by the gate (`p`: where its message lies, `bytes[start, end)`, and what it
   * decodes to): the statement is kept under its name and the message sent as it came, or with its
   * rewritten text; refused when it holds several statements, names an unknown type or does not fit
   * in the memory budget.
   */
  protected parseAllowed(
    p: {
      bytes: Buffer;
      start: number;
      end: number;
      name: string;
      sql: string;
      paramTypes: readonly number[];
    },
    result: GateResult & { ok: true },
  ): void {
    const { name, sql, paramTypes } = p;
    if (result.plans.length > 1) {
      this.refuseExtended({
        sqlstate: '42601',
        message: 'cannot insert multiple commands into a prepared statement',
      });
      return;
    }
    // Postgres answers a parameter type OID that names no type with XX000 ("cache lookup
    // failed for type"): pgwarden refuses it first, as an undefined object (issue 16 item 4).
    const unknown = unknownTypeOid(result.catalog, paramTypes);
    if (unknown !== undefined) {
      this.refuseExtended({ sqlstate: '42704', message: `type with OID ${unknown} does not exist` });
      return;
    }
    const entry: PreparedEntry = {
      sql,
      plan: result.plans[0] ?? null,
      pathVersion: this.o.gateSession.paths.version,
      catalogVersion: result.catalog.version,
      policy: this.o.gateSession.config,
      sent: result.sent?.text ?? sql,
      paramTypes,
    };
    // Kept until Close, DEALLOCATE, DISCARD ALL or the session's end: counted against the memory
    // budget, and refused (53200, that Parse only) when it does not fit (issue 16 item 2).
    if (!this.retained.admits(this.statements.growth(name, entry))) {
      this.refuseExtended(
        this.retained.refusal(
          name ? `prepared statement "${name}"` : 'the unnamed prepared statement',
          sql.length,
        ),
      );
      return;
    }
    // Pipelined Bind/Describe may follow before ParseComplete: the name exists from now on, and
    // is put back as it was if the upstream refuses the Parse (or skips it after an earlier error).
    this.expects.push({ t: 'parse', entry, undo: new MapUndo(this.statements, name) });
    this.statements.set(name, entry);
    if (name === '') this.unnamedDroppedUpstream = false;
    this.o.gateSession.names.prepared.delete(name);
    // Mask at read: the statement prepared upstream is the rewritten text (wall 2).
    if (!result.sent) this.sendRange(p.bytes, p.start, p.end);
    else if (sentUtf8(result.sent))
      this.sendWithText(result.sent, (text) => encodeParse(name, text, paramTypes));
    else this.send(this.rewrittenParse(result.sent, name, paramTypes));
  }

  /**
   * The Parse message of `name` with the rewritten text `sent` and `paramTypes`: the one made last
   * time when it is for the same three values (the steady path hands the same ones each time a
   * client prepares the same statement again: pgbench -M extended), else made and kept. The kept
   * message is never changed once made (written upstream, perhaps still queued there).
   */
  private rewrittenParse(sent: RewrittenSql, name: string, paramTypes: readonly number[]): Buffer {
    const last = this.lastRewrittenParse;
    if (last && last.sent === sent && last.name === name && last.paramTypes === paramTypes) return last.bytes;
    const bytes = encodeParse(name, sent.text, paramTypes);
    this.lastRewrittenParse = { sent, name, paramTypes, bytes };
    return bytes;
  }

  /** The plan of a statement name: protocol-level first, then SQL-level PREPARE (one namespace in Postgres). */
  private statementPlan(name: string): { entry?: PreparedEntry; plan: StatementPlan | null } | undefined {
    const entry = this.statements.get(name);
    if (entry) return { entry, plan: entry.plan };
    return undefined;
  }

  protected bind(f: Frame): Promise<void> | undefined {
    const b = decodeBindNames(f.payload);
    this.startBatch();
    const entry = this.statements.get(b.statement);
    if (!entry) {
      // SQL-level PREPAREd statements can be bound too; pgwarden refuses that path rather than
      // track a second decision for it, and an unknown name is Postgres's own 26000.
      const sqlLevel = this.o.gateSession.names.prepared.has(b.statement);
      this.refuseExtended({
        sqlstate: sqlLevel ? '0A000' : '26000',
        message: sqlLevel
          ? `binding the SQL-level prepared statement "${b.statement}" through the protocol is not supported by pgwarden; use EXECUTE`
          : `prepared statement "${b.statement}" does not exist`,
      });
      return undefined;
    }
    if (this.decidedStill(entry)) {
      this.bound(f.bytes, 0, f.bytes.length, b.portal, entry, b.statement);
      return undefined;
    }
    // DESIGN.md: a decision made at Parse is made again at Bind when the search_path, the catalog
    // or the policy changed.
    return this.withGate(
      entry.sql,
      undefined,
      (_, result) => {
        // The upstream runs the text sent at Parse: when the decision now would send another
        // (other hidden columns, another relation), that text no longer masks what it must.
        if ((result.sent?.text ?? entry.sql) !== entry.sent) {
          this.refuseExtended({
            sqlstate: '0A000',
            message: `prepared statement "${b.statement}" must be prepared again: what it reads or may see changed since it was prepared`,
            hint: 'Close it and send Parse again.',
          });
          return;
        }
        const again: PreparedEntry = {
          sql: entry.sql,
          plan: result.plans[0] ?? null,
          pathVersion: this.o.gateSession.paths.version,
          catalogVersion: result.catalog.version,
          policy: this.o.gateSession.config,
          sent: entry.sent,
          ...(entry.paramTypes ? { paramTypes: entry.paramTypes } : {}),
        };
        this.statements.set(b.statement, again);
        this.bound(f.bytes, 0, f.bytes.length, b.portal, again, b.statement);
      },
      this.refuseExtended,
    );
  }

  /**
   * Whether a Bind to the prepared statement `entry` runs what was decided at its Parse, without
   * deciding it again: under the same policy, and with a rewritten text or under the same
   * search_path and catalog (DESIGN.md: decided again at Bind when one of them changed).
   */
  protected decidedStill(entry: PreparedEntry): boolean {
    const s = this.o.gateSession;
    if (entry.policy !== s.config) return false;
    // PostgreSQL analyzes a prepared statement again when what it reads changed: a view it names
    // is expanded with its new definition, even in a rewritten text (attack: a view re-pointed at
    // a hidden column after Parse), so a catalog change decides it again.
    const current = s.catalogNow();
    if (current === undefined || entry.catalogVersion !== current.version) return false;
    // A rewritten text names every relation schema-qualified: the search_path does not move it.
    return entry.sent !== entry.sql || entry.pathVersion === s.paths.version;
  }

  /**
   * Before a message that names prepared statement `statement` upstream (Bind, Describe 'S'): when
   * it is the unnamed one and pgwarden's own Simple Query (an in-band catalog read) dropped it
   * upstream, where Postgres alone would still hold it, it is prepared again as decided (`e.sent`,
   * its Parse's parameter types); its ParseComplete is consumed. Source: exec_simple_query drops
   * the unnamed statement (postgres.c).
   */
  protected holdUnnamedUpstream(statement: string, e: PreparedEntry): void {
    if (statement !== '' || !this.unnamedDroppedUpstream) return;
    this.unnamedDroppedUpstream = false;
    this.expects.push({ t: 'reparse' });
    this.send(encodeParse('', e.sent, e.paramTypes ?? []));
  }

  /**
   * A Bind of `portal` to the prepared statement `e`, decided (its message: `bytes[start, end)`):
   * the portal exists from now on (see MapUndo), and the message goes up as it came.
   */
  protected bound(
    bytes: Buffer,
    start: number,
    end: number,
    portal: string,
    e: PreparedEntry,
    statement: string,
  ): void {
    this.holdUnnamedUpstream(statement, e);
    this.expects.push({ t: 'bind', undo: new MapUndo(this.portals, portal) });
    let entry = portalEntries.get(e);
    if (!entry) {
      // A portal keeps its statement's text for the audit only: a long one's audit text is made now.
      entry = { plan: e.plan, sql: e.plan ? textToKeep(e.sql, [e.plan]) : e.sql, from: e };
      portalEntries.set(e, entry);
    }
    this.portals.set(portal, entry);
    // Portals and SQL cursors are one namespace upstream.
    this.o.gateSession.names.cursors.delete(portal);
    this.sendRange(bytes, start, end);
  }

  /**
   * The portal entry for a name: a protocol portal, or a SQL cursor (one namespace upstream;
   * psycopg DECLAREs a cursor, then Describes its portal). A refusal when neither, or when the
   * cursor's statement is refused now.
   */
  protected portalFor(name: string): PortalEntry | Refusal | Promise<PortalEntry | Refusal> {
    if (this.o.gateSession.names.cursors.has(name)) {
      return cursorPlan(name, this.o.gateSession, this.o.decide).then((plan) =>
        'sqlstate' in plan ? plan : { plan, sql: '' },
      );
    }
    return this.portals.get(name) ?? { sqlstate: '34000', message: `portal "${name}" does not exist` };
  }

  protected describe(f: Frame): Promise<void> | undefined {
    const d = decodeDescribe(f.payload);
    this.startBatch();
    if (d.target === 'S') {
      const found = this.statementPlan(d.name);
      if (!found) {
        this.refuseExtended({ sqlstate: '26000', message: `prepared statement "${d.name}" does not exist` });
        return undefined;
      }
      if (found.entry) this.holdUnnamedUpstream(d.name, found.entry);
      this.expects.push({ t: 'describe', plan: found.plan });
      this.send(f.bytes);
      return undefined;
    }
    const portal = this.portalFor(d.name);
    if (portal instanceof Promise) return portal.then((p) => this.describePortal(f, p));
    this.describePortal(f, portal);
    return undefined;
  }

  private describePortal(f: Frame, portal: PortalEntry | Refusal): void {
    if ('sqlstate' in portal) return this.refuseExtended(portal);
    this.sendDescribe(f.bytes, 0, f.bytes.length, portal.plan);
  }

  /** A Describe (its message: `bytes[start, end)`) of a statement or portal with `plan`: its reply is expected, and it goes up as it came. */
  protected sendDescribe(bytes: Buffer, start: number, end: number, plan: StatementPlan | null): void {
    this.expects.push({ t: 'describe', plan });
    this.sendRange(bytes, start, end);
  }
}
