// Redacts upstream ErrorResponses of statements that touch a table with a column hidden from the caller.
import type { ErrorFields } from '../wire/error-fields.js';

/**
 * Condition names of class 22 (data_exception), from PostgreSQL 15's src/backend/utils/errcodes.txt.
 * A data exception's message often quotes the offending value ("invalid input syntax for type
 * integer: \"…\""), so its MESSAGE is replaced by the condition name.
 */
const DATA_EXCEPTIONS: Readonly<Record<string, string>> = {
  '22000': 'data_exception',
  '2202E': 'array_subscript_error',
  '22021': 'character_not_in_repertoire',
  '22008': 'datetime_field_overflow',
  '22012': 'division_by_zero',
  '22005': 'error_in_assignment',
  '2200B': 'escape_character_conflict',
  '22022': 'indicator_overflow',
  '22015': 'interval_field_overflow',
  '2201E': 'invalid_argument_for_logarithm',
  '22014': 'invalid_argument_for_ntile_function',
  '22016': 'invalid_argument_for_nth_value_function',
  '2201F': 'invalid_argument_for_power_function',
  '2201G': 'invalid_argument_for_width_bucket_function',
  '22018': 'invalid_character_value_for_cast',
  '22007': 'invalid_datetime_format',
  '22019': 'invalid_escape_character',
  '2200D': 'invalid_escape_octet',
  '22025': 'invalid_escape_sequence',
  '22P06': 'nonstandard_use_of_escape_character',
  '22010': 'invalid_indicator_parameter_value',
  '22023': 'invalid_parameter_value',
  '22013': 'invalid_preceding_or_following_size',
  '2201B': 'invalid_regular_expression',
  '2201W': 'invalid_row_count_in_limit_clause',
  '2201X': 'invalid_row_count_in_result_offset_clause',
  '2202H': 'invalid_tablesample_argument',
  '2202G': 'invalid_tablesample_repeat',
  '22009': 'invalid_time_zone_displacement_value',
  '2200C': 'invalid_use_of_escape_character',
  '2200G': 'most_specific_type_mismatch',
  '22004': 'null_value_not_allowed',
  '22002': 'null_value_no_indicator_parameter',
  '22003': 'numeric_value_out_of_range',
  '2200H': 'sequence_generator_limit_exceeded',
  '22026': 'string_data_length_mismatch',
  '22001': 'string_data_right_truncation',
  '22011': 'substring_error',
  '22027': 'trim_error',
  '22024': 'unterminated_c_string',
  '2200F': 'zero_length_character_string',
  '22P01': 'floating_point_exception',
  '22P02': 'invalid_text_representation',
  '22P03': 'invalid_binary_representation',
  '22P04': 'bad_copy_file_format',
  '22P05': 'untranslatable_character',
  '2200L': 'not_an_xml_document',
  '2200M': 'invalid_xml_document',
  '2200N': 'invalid_xml_content',
  '2200S': 'invalid_xml_comment',
  '2200T': 'invalid_xml_processing_instruction',
  '22030': 'duplicate_json_object_key_value',
  '22031': 'invalid_argument_for_sql_json_datetime_function',
  '22032': 'invalid_json_text',
  '22033': 'invalid_sql_json_subscript',
  '22034': 'more_than_one_sql_json_item',
  '22035': 'no_sql_json_item',
  '22036': 'non_numeric_sql_json_item',
  '22037': 'non_unique_keys_in_a_json_object',
  '22038': 'singleton_sql_json_item_required',
  '22039': 'sql_json_array_not_found',
  '2203A': 'sql_json_member_not_found',
  '2203B': 'sql_json_number_not_found',
  '2203C': 'sql_json_object_not_found',
  '2203D': 'too_many_json_array_elements',
  '2203E': 'too_many_json_object_members',
  '2203F': 'sql_json_scalar_required',
  '2203G': 'sql_json_item_cannot_be_cast_to_target_type',
};

/**
 * The redacted form of an upstream error (DESIGN.md "Error redaction"): DETAIL is dropped for
 * every error (Postgres prints whole rows there: "Failing row contains (…)", "Key (email)=(…)
 * already exists"), and so are WHERE (CONTEXT quotes COPY lines and PL/pgSQL values) and the
 * internal query; a class-22 MESSAGE becomes the condition name, e.g. `invalid_text_representation`.
 * Input and output are ErrorFields; the SQLSTATE, severity, position, schema/table/column and
 * constraint names stay (they name objects, not values).
 */
export function redactError(fields: ErrorFields): ErrorFields {
  const {
    detail: _detail,
    where: _where,
    internalQuery: _internalQuery,
    internalPosition: _internalPosition,
    dataType: _dataType,
    unknownFields: _unknown,
    ...kept
  } = fields;
  if (fields.code.startsWith('22')) {
    kept.message = DATA_EXCEPTIONS[fields.code] ?? 'data_exception';
  }
  return kept;
}

/**
 * A `42501 insufficient_privilege` from the upstream under `roles: managed` (issue 17: "errors from
 * the second wall, if any, are reported as refusals with pgwarden's message"): PostgreSQL refused
 * the statement for the set login, whose grants are computed from the caller's rules, so the
 * analysis let through something the rules do not allow. MESSAGE is pgwarden's, DETAIL keeps
 * PostgreSQL's message (it names the relation, never a value); the rest is dropped.
 */
export function secondWallRefusal(fields: ErrorFields): ErrorFields {
  return {
    severity: fields.severity,
    code: '42501',
    message:
      'permission denied: the privileges pgwarden grants your roles in PostgreSQL do not allow this statement',
    detail: `PostgreSQL refused it: ${fields.message}`,
  };
}

/** Condition names of class P0 (plpgsql_error), PostgreSQL 15's errcodes.txt. */
const PLPGSQL_ERRORS: Readonly<Record<string, string>> = {
  P0000: 'plpgsql_error',
  P0001: 'raise_exception',
  P0002: 'no_data_found',
  P0003: 'too_many_rows',
  P0004: 'assert_failure',
};

/**
 * Whether an error or notice was raised by code that runs inside the statement — a trigger, a rule,
 * a function, `RAISE` — which may print the row it runs on (`RAISE NOTICE '%', OLD`, an exception
 * with NEW in its message): class P0, or a CONTEXT naming a function (Postgres adds "PL/pgSQL
 * function … line … at RAISE" or "SQL function …" to everything raised inside one).
 */
export function raisedByCode(fields: ErrorFields): boolean {
  return fields.code.startsWith('P0') || /\bfunction\b/.test(fields.where ?? '');
}

/**
 * The redacted form of an error or notice raised by code inside the statement (see
 * {@link raisedByCode}), for a caller who does not see everything: {@link redactError}, and its
 * MESSAGE replaced by the condition name (a P0 code) or a sentence saying it was withheld.
 * Severity and SQLSTATE stay.
 */
export function redactRaised(fields: ErrorFields): ErrorFields {
  const kept = redactError(fields);
  const { hint: _hint, ...out } = kept;
  out.message =
    PLPGSQL_ERRORS[fields.code] ??
    `${fields.severity === 'ERROR' ? 'an error' : 'a message'} raised by a function or trigger (its text may show values hidden from you, so pgwarden withholds it)`;
  return out;
}

/**
 * An error about a rewritten text, told in the caller's terms (mask at read): POSITION mapped back
 * to the caller's text (dropped when it points into text pgwarden wrote), and generated CTE names
 * replaced by the caller's in MESSAGE, DETAIL and HINT.
 */
export function unrewriteError(
  fields: ErrorFields,
  positions: { toOriginal(p: number): number | undefined } | null,
  names: ReadonlyMap<string, string>,
): ErrorFields {
  const out: ErrorFields = { ...fields };
  if (out.position !== undefined && positions) {
    const p = positions.toOriginal(out.position);
    if (p === undefined) delete out.position;
    else out.position = p;
  }
  const rename = (t: string | undefined) => {
    if (t === undefined) return t;
    let r = t;
    for (const [gen, orig] of names) r = r.replaceAll(gen, orig);
    return r;
  };
  out.message = rename(out.message) ?? out.message;
  if (out.detail !== undefined) out.detail = rename(out.detail) as string;
  if (out.hint !== undefined) out.hint = rename(out.hint) as string;
  delete out.internalQuery;
  delete out.internalPosition;
  return out;
}
