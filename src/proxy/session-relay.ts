// A logged-in session's statement loop: the relay wired to the session's policy, roles, catalog and search_path.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../policy/config-schema.js';
import type { ErrorFields } from '../wire/error-fields.js';
import type { FencedSession } from './commit-fence.js';
import type { SqlPrepared } from './gate-session.js';
import { Relay } from './relay.js';
import { RetainedStatements, retainedCost } from './retained-statements.js';
import type { SearchPathTracker } from './search-path-tracker.js';
import type { SessionCatalog } from './session-catalog.js';
import type { SessionContext } from './session-context.js';
import type { UpstreamSession } from './upstream.js';

/** What the relay reads of its session as it goes; a live view (a reload swaps policy and roles, issue 4). */
export interface LiveSession {
  readonly policy: Config;
  readonly roles: readonly string[];
  /** A reload's grant sync under `roles: managed`: statements wait for it (undefined: none running). */
  readonly settling: Promise<void> | undefined;
}

/** One logged-in session, as its relay is wired to it. */
export interface SessionRelayWiring {
  readonly ctx: SessionContext;
  readonly client: net.Socket;
  readonly upstream: UpstreamSession;
  readonly log: Logger;
  readonly connId: number;
  /** The caller's name (audit lines), the viewer it acts as, and the upstream login. */
  readonly identity: string;
  readonly viewer: string | undefined;
  readonly login: string;
  /** Logged in as a set login (`roles: managed`): PostgreSQL's privileges are the third wall. */
  readonly secondWall: boolean;
  readonly database: string;
  readonly live: LiveSession;
  readonly catalogs: SessionCatalog;
  readonly paths: SearchPathTracker;
  readonly maxMessageBytes: number;
  /** Sends the upstream CancelRequest of this session's backend (the commit fence's cancel); never rejects. */
  readonly cancelUpstream: () => Promise<void>;
  /** Ends the session with the FATAL (when given). */
  readonly terminate: (fatal: ErrorFields | undefined) => void;
  /** Called after each ReadyForQuery has been written to the client. */
  readonly afterReadyForQuery: () => void;
}

/**
 * The relay (relay.ts) of a logged-in session, not yet started: statements are decided under the
 * session's live policy and roles (after a reload's grant sync, when one runs), analyzed with its
 * SessionCatalog (DDL invalidates it, each ReadyForQuery's transaction status moves it on), under
 * its search_path. The closures are made once per session here, none per message.
 */
export function sessionRelay(w: SessionRelayWiring): Relay {
  const { ctx, catalogs, live } = w;
  // Prepared statements of both levels count against the memory budget while kept (issue 16 item 2).
  const retained = new RetainedStatements(ctx.memory);
  // The commit fence (commit-fence.ts): this session as it sees it, registered until it stops.
  const { fence, probe } = catalogs.commitFence();
  const db = w.database;
  const fenced: FencedSession = {
    backendPid: w.upstream.processId,
    get busy() {
      return relay.busy;
    },
    inFlightRelations: () => relay.inFlightRelations(),
    inFlightBindsOnlyCatalog: () => relay.inFlightBindsOnlyCatalog(),
    cancelForFence: () => {
      relay.fenceCanceled = true;
      void w.cancelUpstream();
    },
  };
  const unregister = fence.register(db, fenced);
  const relay = new Relay({
    client: w.client,
    upstream: w.upstream,
    log: w.log,
    audit: ctx.audit,
    connId: w.connId,
    identity: w.identity,
    ...(w.viewer !== undefined ? { viewer: w.viewer } : {}),
    login: w.login,
    secondWall: w.secondWall,
    gateSession: {
      // Getters: a policy reload swaps the config and the roles of an open session (issue 4).
      get config(): Config {
        return live.policy;
      },
      get roles() {
        return live.roles;
      },
      database: w.database,
      connection: ctx.connection,
      paths: w.paths,
      names: { prepared: retained.map((p: SqlPrepared) => retainedCost(p.text)), cursors: new Map() },
      rewrites: ctx.rewrites,
      ...(ctx.walls ? { walls: ctx.walls } : {}),
      catalog: async (refresh) => {
        if (live.settling) await live.settling;
        return catalogs.get(refresh);
      },
      catalogBeforeGrants: () => (live.settling ? Promise.resolve(undefined) : catalogs.beforeGrants()),
      catalogNow: () => (live.settling ? undefined : catalogs.now()),
      catalogLast: () => (live.settling ? undefined : catalogs.last()),
      inBandCatalog: () => catalogs.readOwn(),
      manageReady: () => catalogs.manageReady(),
      ...(ctx.policyRefusal ? { policyRefusal: ctx.policyRefusal } : {}),
    },
    cache: ctx.analyses,
    decide: (analysis, roles, dctx) => ctx.decisions.decide(analysis, roles, dctx),
    invalidateCatalog: () => catalogs.invalidate(),
    committed: () => catalogs.transactionStatus('I'),
    maxMessageBytes: w.maxMessageBytes,
    memory: ctx.memory,
    retained,
    terminate: w.terminate,
    onTransactionStatus: (status) => {
      catalogs.transactionStatus(status);
      // A COMMIT's ReadyForQuery: its change is published, the sessions it held go on.
      fence.lower(db, fenced);
      w.afterReadyForQuery();
    },
    fence: {
      held: () => fence.held(db, fenced),
      epoch: () => fence.epoch(db),
      needed: () => catalogs.changesPending,
      raise: () => fence.raise(db, fenced, probe),
      lower: () => fence.lower(db, fenced),
      close: unregister,
    },
  });
  catalogs.relay = relay;
  return relay;
}
