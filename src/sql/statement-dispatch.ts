// The exhaustive table of top-level statement node types: each is a row statement, session control, MANAGE, or refused.

import type { Node } from 'libpg-query';
import type { StatementAnalysis } from './analysis-types.js';
import {
  copyStatement,
  createTableAsStatement,
  explainStatement,
  selectIntoStatement,
  viewStatement,
} from './compound-statements.js';
import { analyzeRowStatement } from './row-statement.js';
import {
  closeStatement,
  deallocateStatement,
  declareCursorStatement,
  discardStatement,
  executeStatement,
  fetchStatement,
  prepareStatement,
  showStatement,
  transactionStatement,
  variableSetStatement,
} from './session-control.js';
import {
  manageStatement,
  refusalAt,
  refusedStatement,
  type StatementContext,
  sessionStatement,
} from './statement-context.js';

type Fields = Record<string, unknown>;

/** Every node name libpg-query 15's Node union has (`SelectStmt`, `A_Const`, …). */
type NodeName<U> = U extends unknown ? keyof U : never;

/**
 * Every statement node type of the PostgreSQL 15 grammar: the Node names ending in `Stmt`
 * (gram.y's `stmt` alternatives, plus RawStmt, SetOperationStmt, ReturnStmt and PLAssignStmt,
 * which never stand at the top and are refused). Derived from libpg-query's own types, so a
 * statement kind added to them is a compile error until the table below has a rule for it.
 */
export type StatementNodeType = Extract<NodeName<Node>, `${string}Stmt`>;

/** Decides one top-level statement: input its fields and context, output its analysis. */
export type StatementHandler = (node: Fields, ctx: StatementContext) => StatementAnalysis;

/** `ALTER TABLE`-style words of an ObjectType enum value (`OBJECT_MATVIEW` → `MATERIALIZED VIEW`). */
export function objectWords(objtype: unknown): string {
  if (typeof objtype !== 'string') return 'OBJECT';
  const special: Record<string, string> = {
    OBJECT_MATVIEW: 'MATERIALIZED VIEW',
    OBJECT_FDW: 'FOREIGN DATA WRAPPER',
    OBJECT_FOREIGN_SERVER: 'SERVER',
    OBJECT_TSCONFIGURATION: 'TEXT SEARCH CONFIGURATION',
    OBJECT_TSDICTIONARY: 'TEXT SEARCH DICTIONARY',
    OBJECT_TSPARSER: 'TEXT SEARCH PARSER',
    OBJECT_TSTEMPLATE: 'TEXT SEARCH TEMPLATE',
    OBJECT_OPCLASS: 'OPERATOR CLASS',
    OBJECT_OPFAMILY: 'OPERATOR FAMILY',
    OBJECT_TABCONSTRAINT: 'CONSTRAINT',
    OBJECT_DOMCONSTRAINT: 'DOMAIN CONSTRAINT',
    OBJECT_STATISTIC_EXT: 'STATISTICS',
    OBJECT_USER_MAPPING: 'USER MAPPING',
    OBJECT_LARGEOBJECT: 'LARGE OBJECT',
    OBJECT_ACCESS_METHOD: 'ACCESS METHOD',
    OBJECT_EVENT_TRIGGER: 'EVENT TRIGGER',
    OBJECT_PARAMETER_ACL: 'PARAMETER',
  };
  return special[objtype] ?? objtype.replace(/^OBJECT_/, '').replace(/_/g, ' ');
}

/** A handler needing MANAGE with a fixed reason. */
const manage =
  (reason: string): StatementHandler =>
  (_n, ctx) =>
    manageStatement(ctx, reason);

/** A handler needing MANAGE with a reason read from the node. */
const manageBy =
  (reason: (n: Fields) => string): StatementHandler =>
  (n, ctx) =>
    manageStatement(ctx, reason(n));

/** A node type that never stands at the top of a statement list: refused 0A000. */
const notTopLevel: StatementHandler = (_n, ctx) =>
  refusedStatement(ctx, refusalAt(ctx, '0A000', `${ctx.nodeType} cannot be analyzed as a statement`));

/** A row statement for the query analysis; SELECT … INTO creates a table (selectIntoStatement). */
const row =
  (t: 'SelectStmt' | 'InsertStmt' | 'UpdateStmt' | 'DeleteStmt' | 'MergeStmt'): StatementHandler =>
  (n, ctx) =>
    t === 'SelectStmt' && n.intoClause !== undefined
      ? selectIntoStatement(n, ctx)
      : analyzeRowStatement(t, n, ctx);

/** Session control with no effect to track. */
const session: StatementHandler = (_n, ctx) => sessionStatement(ctx);

/**
 * The rule for every statement node type (DESIGN.md "Analysis": session control needs no
 * permission; the four row actions go to the query analysis; everything else needs MANAGE).
 * The `Record` over {@link StatementNodeType} makes a missing entry a compile error.
 */
export const STATEMENT_HANDLERS: Readonly<Record<StatementNodeType, StatementHandler>> = {
  // Row statements.
  SelectStmt: row('SelectStmt'),
  InsertStmt: row('InsertStmt'),
  UpdateStmt: row('UpdateStmt'),
  DeleteStmt: row('DeleteStmt'),
  MergeStmt: row('MergeStmt'),
  // Session control (session-control.ts).
  TransactionStmt: transactionStatement,
  VariableSetStmt: variableSetStatement,
  VariableShowStmt: showStatement,
  DiscardStmt: discardStatement,
  DeallocateStmt: deallocateStatement,
  ClosePortalStmt: closeStatement,
  FetchStmt: fetchStatement,
  UnlistenStmt: session,
  PrepareStmt: prepareStatement,
  ExecuteStmt: executeStatement,
  DeclareCursorStmt: declareCursorStatement,
  // SET CONSTRAINTS only moves when this transaction's deferrable constraints are checked.
  ConstraintsSetStmt: session,
  // Statements around a query (compound-statements.ts).
  ExplainStmt: explainStatement,
  CreateTableAsStmt: createTableAsStatement,
  ViewStmt: viewStatement,
  CopyStmt: copyStatement,
  // MANAGE: structure, access, configuration, bulk operations, procedures (seed 004 "Actions").
  AlterTableStmt: manageBy((n) => `ALTER ${objectWords(n.objtype)}`),
  AlterDomainStmt: manage('ALTER DOMAIN'),
  GrantStmt: manageBy((n) => (n.is_grant === true ? 'GRANT' : 'REVOKE')),
  GrantRoleStmt: manageBy((n) => (n.is_grant === true ? 'GRANT role' : 'REVOKE role')),
  AlterDefaultPrivilegesStmt: manage('ALTER DEFAULT PRIVILEGES'),
  ClusterStmt: manage('CLUSTER'),
  CreateStmt: manage('CREATE TABLE'),
  DefineStmt: manageBy((n) => `CREATE ${objectWords(n.kind)}`),
  DropStmt: manageBy((n) => `DROP ${objectWords(n.removeType)}`),
  TruncateStmt: manage('TRUNCATE'),
  CommentStmt: manage('COMMENT'),
  IndexStmt: manage('CREATE INDEX'),
  CreateFunctionStmt: manageBy((n) => (n.is_procedure === true ? 'CREATE PROCEDURE' : 'CREATE FUNCTION')),
  AlterFunctionStmt: manageBy((n) => `ALTER ${objectWords(n.objtype)}`),
  DoStmt: manage('DO'),
  RenameStmt: manageBy((n) => `ALTER ${objectWords(n.renameType)} RENAME`),
  RuleStmt: manage('CREATE RULE'),
  // NOTIFY carries a value out of the statement to every listener; LISTEN subscribes to them.
  NotifyStmt: manage('NOTIFY'),
  ListenStmt: manage('LISTEN'),
  LoadStmt: manage('LOAD'),
  CreateDomainStmt: manage('CREATE DOMAIN'),
  CreatedbStmt: manage('CREATE DATABASE'),
  DropdbStmt: manage('DROP DATABASE'),
  VacuumStmt: manageBy((n) => (n.is_vacuumcmd === true ? 'VACUUM' : 'ANALYZE')),
  CreateSeqStmt: manage('CREATE SEQUENCE'),
  AlterSeqStmt: manage('ALTER SEQUENCE'),
  CreateTrigStmt: manage('CREATE TRIGGER'),
  CreatePLangStmt: manage('CREATE LANGUAGE'),
  CreateRoleStmt: manage('CREATE ROLE'),
  AlterRoleStmt: manage('ALTER ROLE'),
  DropRoleStmt: manage('DROP ROLE'),
  LockStmt: manage('LOCK'),
  ReindexStmt: manage('REINDEX'),
  CheckPointStmt: manage('CHECKPOINT'),
  CreateSchemaStmt: manage('CREATE SCHEMA'),
  AlterDatabaseStmt: manage('ALTER DATABASE'),
  AlterDatabaseRefreshCollStmt: manage('ALTER DATABASE REFRESH COLLATION VERSION'),
  AlterDatabaseSetStmt: manage('ALTER DATABASE SET'),
  AlterRoleSetStmt: manage('ALTER ROLE SET'),
  CreateConversionStmt: manage('CREATE CONVERSION'),
  CreateCastStmt: manage('CREATE CAST'),
  CreateOpClassStmt: manage('CREATE OPERATOR CLASS'),
  CreateOpFamilyStmt: manage('CREATE OPERATOR FAMILY'),
  AlterOpFamilyStmt: manage('ALTER OPERATOR FAMILY'),
  CreateTableSpaceStmt: manage('CREATE TABLESPACE'),
  DropTableSpaceStmt: manage('DROP TABLESPACE'),
  AlterObjectDependsStmt: manageBy((n) => `ALTER ${objectWords(n.objectType)} DEPENDS ON EXTENSION`),
  AlterObjectSchemaStmt: manageBy((n) => `ALTER ${objectWords(n.objectType)} SET SCHEMA`),
  AlterOwnerStmt: manageBy((n) => `ALTER ${objectWords(n.objectType)} OWNER`),
  AlterOperatorStmt: manage('ALTER OPERATOR'),
  AlterTypeStmt: manage('ALTER TYPE'),
  DropOwnedStmt: manage('DROP OWNED'),
  ReassignOwnedStmt: manage('REASSIGN OWNED'),
  CompositeTypeStmt: manage('CREATE TYPE'),
  CreateEnumStmt: manage('CREATE TYPE AS ENUM'),
  CreateRangeStmt: manage('CREATE TYPE AS RANGE'),
  AlterEnumStmt: manage('ALTER TYPE'),
  AlterTSDictionaryStmt: manage('ALTER TEXT SEARCH DICTIONARY'),
  AlterTSConfigurationStmt: manage('ALTER TEXT SEARCH CONFIGURATION'),
  CreateFdwStmt: manage('CREATE FOREIGN DATA WRAPPER'),
  AlterFdwStmt: manage('ALTER FOREIGN DATA WRAPPER'),
  CreateForeignServerStmt: manage('CREATE SERVER'),
  AlterForeignServerStmt: manage('ALTER SERVER'),
  CreateUserMappingStmt: manage('CREATE USER MAPPING'),
  AlterUserMappingStmt: manage('ALTER USER MAPPING'),
  DropUserMappingStmt: manage('DROP USER MAPPING'),
  AlterTableSpaceOptionsStmt: manage('ALTER TABLESPACE'),
  AlterTableMoveAllStmt: manage('ALTER TABLE ALL IN TABLESPACE'),
  SecLabelStmt: manage('SECURITY LABEL'),
  CreateForeignTableStmt: manage('CREATE FOREIGN TABLE'),
  ImportForeignSchemaStmt: manage('IMPORT FOREIGN SCHEMA'),
  CreateExtensionStmt: manage('CREATE EXTENSION'),
  AlterExtensionStmt: manage('ALTER EXTENSION'),
  AlterExtensionContentsStmt: manage('ALTER EXTENSION ADD/DROP'),
  CreateEventTrigStmt: manage('CREATE EVENT TRIGGER'),
  AlterEventTrigStmt: manage('ALTER EVENT TRIGGER'),
  RefreshMatViewStmt: manage('REFRESH MATERIALIZED VIEW'),
  ReplicaIdentityStmt: manage('ALTER TABLE REPLICA IDENTITY'),
  AlterSystemStmt: manage('ALTER SYSTEM'),
  CreatePolicyStmt: manage('CREATE POLICY'),
  AlterPolicyStmt: manage('ALTER POLICY'),
  CreateTransformStmt: manage('CREATE TRANSFORM'),
  CreateAmStmt: manage('CREATE ACCESS METHOD'),
  CreatePublicationStmt: manage('CREATE PUBLICATION'),
  AlterPublicationStmt: manage('ALTER PUBLICATION'),
  CreateSubscriptionStmt: manage('CREATE SUBSCRIPTION'),
  AlterSubscriptionStmt: manage('ALTER SUBSCRIPTION'),
  DropSubscriptionStmt: manage('DROP SUBSCRIPTION'),
  CreateStatsStmt: manage('CREATE STATISTICS'),
  AlterCollationStmt: manage('ALTER COLLATION'),
  // CALL runs a procedure: code the analysis cannot see into.
  CallStmt: manage('CALL'),
  AlterStatsStmt: manage('ALTER STATISTICS'),
  // Not statements of their own at the top level.
  RawStmt: notTopLevel,
  SetOperationStmt: notTopLevel,
  ReturnStmt: notTopLevel,
  PLAssignStmt: notTopLevel,
};

/**
 * The handler for a node type, or undefined for a name outside the table (a node type of another
 * grammar version: the caller refuses it 0A000).
 */
export function statementHandler(nodeType: string): StatementHandler | undefined {
  return Object.hasOwn(STATEMENT_HANDLERS, nodeType)
    ? STATEMENT_HANDLERS[nodeType as StatementNodeType]
    : undefined;
}
