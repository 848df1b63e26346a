// What the README tells a new user to run works from any folder and never makes npx fetch a package.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The fenced code blocks of `lang` in the README, in order. */
function blocks(lang: string): string[] {
  return [...README.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] ?? '');
}

describe('README', () => {
  test('nothing in it, nor in the MCP README it links, runs npx (no package of that name is ours to fetch)', () => {
    expect(README).not.toMatch(/\bnpx\b/);
    expect(fs.readFileSync(path.join(ROOT, 'src/mcp/README.md'), 'utf8')).not.toMatch(/\bnpx\b/);
  });

  test('the MCP snippet runs bin/pgwarden.js and its config by absolute paths', () => {
    const snippet = blocks('json').find((b) => b.includes('mcpServers'));
    const server = (
      JSON.parse(snippet ?? '{}') as { mcpServers: Record<string, { command: string; args: string[] }> }
    ).mcpServers.pgwarden;
    expect(server?.command).toBe('node');
    const [bin, command, flag, config] = server?.args ?? [];
    expect(path.isAbsolute(bin ?? '') && bin?.endsWith('/bin/pgwarden.js')).toBe(true);
    expect([command, flag]).toEqual(['mcp', '--config']);
    // The config `npm start` writes and prints, whose policy is the store the console edits.
    expect(path.isAbsolute(config ?? '') && config?.endsWith('/.pgwarden/demo.pgwarden.yaml')).toBe(true);
  });

  test('says both test commands', () => {
    expect(README).toContain('npm test');
    expect(README).toContain('npm run test:clients');
  });
});
