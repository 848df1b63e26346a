// What a relay needs from its session: sockets, logs and audit, the gate's inputs, budgets, callbacks.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { AnalysisCache } from '../sql/analyze.js';
import type { ErrorFields } from '../wire/error-fields.js';
import type { AuditLog } from './audit.js';
import type { SessionFence } from './commit-fence.js';
import type { GateSession } from './gate-session.js';
import type { MemoryBudget } from './memory-budget.js';
import type { RetainedStatements } from './retained-statements.js';
import type { Decider } from './statement-plan.js';
import type { UpstreamSession } from './upstream.js';

/** What the relay needs from its session. */
export interface RelayOptions {
  readonly client: net.Socket;
  readonly upstream: UpstreamSession;
  readonly log: Logger;
  readonly audit: AuditLog;
  readonly connId: number;
  readonly identity: string;
  /** The viewer the connection acts for (issue 8), when it names one. */
  readonly viewer?: string;
  /** The upstream login the session runs as (a set login under `roles: managed`), for the audit. */
  readonly login?: string;
  /**
   * True when the upstream login is a set login (issue 17): its 42501 is the second wall's refusal,
   * reported with pgwarden's message.
   */
  readonly secondWall?: boolean;
  readonly gateSession: GateSession;
  readonly cache: AnalysisCache;
  readonly decide: Decider;
  readonly invalidateCatalog: () => void;
  /**
   * A COMMIT completed (its CommandComplete): the transaction's DDL is visible to every session
   * from now, though the Query message may run on (`…; COMMIT; <long statement>`) before its
   * ReadyForQuery; absent: the change is published at ReadyForQuery only.
   */
  readonly committed?: () => void;
  readonly maxMessageBytes: number;
  /** The proxy's budget for buffered large messages (issue 16 item 2); absent: nothing is counted. */
  readonly memory?: MemoryBudget;
  /**
   * The session's prepared statements as the budget counts them (issue 16 item 2; its SQL-level
   * ones are `gateSession.names.prepared`, made by it); absent: the protocol-level ones alone, by `memory`.
   */
  readonly retained?: RetainedStatements;
  /** Ends the session with a FATAL (or quietly). */
  readonly terminate: (fatal?: ErrorFields) => void;
  readonly onTransactionStatus: (status: 'I' | 'T' | 'E') => void;
  /** The commit fence (commit-fence.ts); absent: none (unit tests of the relay). */
  readonly fence?: SessionFence;
}
