// The Catalog value: an immutable snapshot of one upstream database's relations, columns and functions.

/** Relation kinds as pg_class.relkind reports them, named. */
export type RelationKind = 'table' | 'partitioned' | 'view' | 'matview' | 'foreign' | 'sequence';

/**
 * One column of a relation (pg_attribute row, attnum > 0, not dropped).
 * `generatedFrom` lists the names of the columns a generated column's expression reads
 * (DESIGN.md "Derived values": a generated column over a hidden column is hidden too).
 * `unique` is true when the column takes part in a UNIQUE, PRIMARY KEY or EXCLUSION
 * constraint or a unique index (DESIGN.md "Writes as reads").
 */
export interface CatalogColumn {
  readonly name: string;
  readonly attnum: number;
  readonly typeOid: number;
  /** format_type(atttypid, atttypmod), e.g. `numeric(10,2)`. */
  readonly typeName: string;
  readonly notNull: boolean;
  /** pg_get_expr of the generation expression, or null for an ordinary column. */
  readonly generated: string | null;
  readonly generatedFrom: readonly string[];
  readonly unique: boolean;
}

/** A write a trigger or a row-level security policy runs on. */
export type WriteEvent = 'INSERT' | 'UPDATE' | 'DELETE';

/**
 * Something the server evaluates over the columns of a row a write stores or removes: a unique or
 * exclusion index (its key columns, and those its expressions or partial-index predicate read), a
 * CHECK constraint, a foreign key (its columns, and the key it references in another relation), a
 * partition key (`partition`: the key columns of the relation's own or an ancestor's PARTITION BY,
 * and those its expressions read; named after the partitioned table), a user trigger (`trigger`:
 * its function gets the whole row, so every column), or a row-level security policy for UPDATE or
 * DELETE (`policy`: the columns its USING and WITH CHECK read, every column when they hold a
 * subquery).
 * A write can succeed or fail, or count other rows, depending on those columns' values (DESIGN.md
 * "Writes as reads").
 */
export interface CatalogConstraint {
  readonly kind: 'unique' | 'exclusion' | 'check' | 'foreign' | 'partition' | 'trigger' | 'policy' | 'rule';
  readonly name: string;
  readonly columns: readonly string[];
  /**
   * False for a CHECK constraint added NOT VALID (pg_constraint.convalidated): stored rows may
   * fail it, and every UPDATE of such a row does. Absent: validated.
   */
  readonly validated?: false;
  /** For a trigger, a policy or a rule: the writes it runs on. */
  readonly events?: readonly WriteEvent[];
  /**
   * For a rule (pg_rewrite, CREATE RULE … ON INSERT/UPDATE/DELETE): the other relations its
   * condition and actions name (pg_depend), as [schema, table]; the rewriter runs them with the
   * rule owner's privileges, so PostgreSQL's own (wall 3) do not stop them reading a hidden column.
   */
  readonly reads?: readonly (readonly [schema: string, table: string])[];
  /** For a foreign key: the referenced relation and its key columns, in order. */
  readonly references?: {
    readonly schema: string;
    readonly table: string;
    readonly columns: readonly string[];
  };
}

/**
 * Any type (pg_type row outside pg_toast). `why` is set when its input runs user code: a domain
 * (its CHECKs may call any function), a target of a user-defined cast, or a type built on one
 * (array, domain, range, multirange, composite). Naming one is a function call in disguise
 * (DESIGN.md "Side channels": casts to domains need MANAGE).
 */
export interface CatalogType {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  readonly why: string | null;
}

/** One relation (pg_class row of kind r, p, v, m, f or S). */
export interface CatalogRelation {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  readonly kind: RelationKind;
  /** Columns in attnum order, dropped ones left out. */
  readonly columns: readonly CatalogColumn[];
  /** pg_get_viewdef for views and materialized views, else null. */
  readonly viewDefinition: string | null;
  /** What the server evaluates over a written row, with the columns it reads (absent: none known). */
  readonly constraints?: readonly CatalogConstraint[];
  /** pg_class.reltype: the OID of the relation's row type (a column of that type holds its rows). */
  readonly rowTypeOid?: number;
  /** The array type of the row type (pg_type.typarray). */
  readonly rowArrayTypeOid?: number;
  /** pg_class.relhassubclass: it has (or had) inheritance children or partitions (absent: unknown, so may). */
  readonly hasChildren?: boolean;
  /** OIDs of the inheritance or partitioning parents (pg_inherits.inhparent, in inhseqno order). */
  readonly parents?: readonly number[];
}

/** One function or procedure (pg_proc row). */
export interface CatalogFunction {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  /** Argument type OIDs (proargtypes), input arguments only. */
  readonly argTypes: readonly number[];
  readonly returnType: number;
  readonly returnsSet: boolean;
  /** provolatile: immutable, stable, volatile. */
  readonly volatility: 'immutable' | 'stable' | 'volatile';
  /** prokind: function, aggregate, window, procedure. */
  readonly kind: 'function' | 'aggregate' | 'window' | 'procedure';
  /**
   * The columns the function yields in FROM when the catalog fixes them (Postgres 15
   * get_expr_result_type / build_function_result_tupdesc_t): its OUT, INOUT and TABLE parameters
   * in order (an unnamed one is `columnN`, N its position among them), or, without any, the
   * attributes of the composite type it returns. Absent: a scalar (or polymorphic) result, or
   * `record` without OUT parameters (a column definition list is then required).
   * `fromOutParameters` tells the two apart: a single OUT parameter makes a scalar result named
   * after the parameter (chooseScalarFunctionAlias), and no OUT parameter result accepts a
   * column definition list.
   */
  readonly resultColumns?: readonly FunctionResultColumn[];
  readonly fromOutParameters?: boolean;
}

/** One column of a function's result: its name and type OID (pg_proc.proallargtypes or pg_attribute.atttypid). */
export interface FunctionResultColumn {
  readonly name: string;
  readonly typeOid: number;
}

/**
 * Everything the analysis knows about one upstream database. Immutable; a refresh makes a new
 * value with a higher `version`. Keys of `relations` are `schema.name` with both parts exact
 * (already case-folded as stored in pg_class); keys of `functions` are `schema.name`.
 */
export interface Catalog {
  /** Monotonic per database; part of every analysis cache key. */
  readonly version: number;
  /** server_version_num, e.g. 150018. */
  readonly serverVersionNum: number;
  /** The upstream login's default search_path, already resolved (`"$user"` expanded, missing schemas dropped). */
  readonly defaultSearchPath: readonly string[];
  /** The upstream login (`current_user`): what `"$user"` in a search_path names. */
  readonly sessionUser?: string;
  readonly namespaces: ReadonlySet<string>;
  readonly relations: ReadonlyMap<string, CatalogRelation>;
  readonly functions: ReadonlyMap<string, readonly CatalogFunction[]>;
  /** Every type by `schema.name` (absent: not read, e.g. an old fixture). */
  readonly types?: ReadonlyMap<string, CatalogType>;
  /** OIDs of the types whose input runs user code (a write to a column of one runs it too). */
  readonly userCodeTypeOids?: ReadonlySet<number>;
}

/** The key of `Catalog.relations` and `Catalog.functions` for an exact schema and name. */
export function catalogKey(schema: string, name: string): string {
  return `${schema}.${name}`;
}
