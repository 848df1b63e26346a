// The operator names PostgreSQL 15 defines in pg_catalog: any other operator name is user-defined.

/**
 * Every `oprname` of pg_operator in pg_catalog on PostgreSQL 15
 * (`SELECT DISTINCT oprname FROM pg_operator WHERE oprnamespace = 'pg_catalog'::regnamespace`).
 * Source: a PostgreSQL 15 server's catalog. `!=` is the parser's spelling of `<>`.
 */
export const BUILTIN_OPERATOR_NAMES: ReadonlySet<string> = new Set(
  (
    '!! !~ !~* !~~ !~~* # ## #- #> #>> % & && &< &<| &> * *< *<= *<> *= *> *>= + - -> ->> -|- / < <-> ' +
    '<< <<= <<| <= <> <@ <^ = > >= >> >>= >^ ? ?# ?& ?- ?-| ?| ?|| @ @-@ @> @? @@ @@@ ^ ^@ | |&> |/ ' +
    '|>> || ||/ ~ ~* ~<=~ ~<~ ~= ~>=~ ~>~ ~~ ~~* !='
  ).split(' '),
);
