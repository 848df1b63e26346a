// docs/configuration.md cannot drift from the schema: every key path of the zod config schema appears in it, and it names no key the schema lacks.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { type ZodTypeAny, z } from 'zod';
import { configSchema } from '../../../src/policy/config-schema.js';

const DOC = path.resolve(import.meta.dirname, '../../../docs/configuration.md');

/**
 * Every key path of a zod schema: `a`, `a.b`, `<name>` for a record's keys, `[]` for an array's
 * items (`roles.<name>.permissions[].effect`), through defaults, optionals, nullables and refinements.
 */
function keyPaths(schema: ZodTypeAny, prefix = ''): string[] {
  if (schema instanceof z.ZodDefault) return keyPaths(schema._def.innerType, prefix);
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return keyPaths(schema.unwrap(), prefix);
  if (schema instanceof z.ZodEffects) return keyPaths(schema.innerType(), prefix);
  if (schema instanceof z.ZodArray) return keyPaths(schema.element, `${prefix}[]`);
  if (schema instanceof z.ZodRecord) return keyPaths(schema.valueSchema, `${prefix}.<name>`);
  if (schema instanceof z.ZodObject) {
    return Object.entries(schema.shape as Record<string, ZodTypeAny>).flatMap(([k, v]) => {
      const p = prefix === '' ? k : `${prefix}.${k}`;
      return [p, ...keyPaths(v, p)];
    });
  }
  return [];
}

/** The key paths the document's tables define: the first cell of each row, in backquotes. */
function documentedPaths(doc: string): string[] {
  return [...doc.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1] ?? '');
}

describe('docs/configuration.md', () => {
  const doc = fs.readFileSync(DOC, 'utf8');
  const paths = keyPaths(configSchema);

  test('walks the schema down to the leaves', () => {
    expect(paths).toContain('limits.max_client_connections');
    expect(paths).toContain('roles.<name>.permissions[].column');
    expect(paths).toContain('api_keys[].expires_at');
  });

  test('documents every key of the schema, each in a table row of its own', () => {
    const documented = new Set(documentedPaths(doc));
    expect(paths.filter((p) => !documented.has(p))).toEqual([]);
  });

  test('documents no key the schema does not have', () => {
    const known = new Set(paths);
    expect(documentedPaths(doc).filter((p) => !known.has(p))).toEqual([]);
  });

  test('every row gives a type, a default and an example', () => {
    for (const row of doc.split('\n').filter((l) => /^\| `[^`]+` \|/.test(l))) {
      const cells = row.split(' | ');
      expect(cells.length, row).toBe(4);
      expect(cells[3], row).toContain('Example: `');
    }
  });

  test('the README links it', () => {
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');
    expect(readme).toContain('(docs/configuration.md)');
  });
});
