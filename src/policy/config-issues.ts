// Renders zod validation issues as `path: message` lines, the form every config problem is reported in.
import type { ZodIssue } from 'zod';

/**
 * Renders a zod issue path as `roles.analyst.permissions[2].effect`; `(top level)` for an empty path.
 * Input: the path parts. Output: the text. Never throws.
 */
export function formatPath(p: readonly (string | number)[]): string {
  let out = '';
  for (const part of p) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out === '' ? '(top level)' : out;
}

/**
 * Renders one zod issue as `path: message` (enum issues list the expected values, unknown keys are
 * named). Input: the issue. Output: one line. Never throws.
 */
export function formatIssue(issue: ZodIssue): string {
  if (issue.code === 'invalid_enum_value') {
    return `${formatPath(issue.path)}: expected ${issue.options.map((o) => JSON.stringify(o)).join(' | ')}`;
  }
  if (issue.code === 'unrecognized_keys') {
    return `${formatPath(issue.path)}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
  }
  return `${formatPath(issue.path)}: ${issue.message}`;
}
