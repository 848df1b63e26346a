// Waiting for a line in an audit file that pgwarden writes in batches (every flushMs, 500 ms by default).
import fs from 'node:fs';

/**
 * Resolves once `file` exists and contains `text`; audit lines are buffered (src/logger.ts: 8 KiB or
 * every 500 ms), so a line for a statement that just ran may reach the file up to a flush later.
 * Input: the file path, the text to find, a bound in ms (default 10 s). Output: the file's text at
 * the moment it contained `text`. Throws when the bound passes first, naming the text.
 */
export async function waitForFileText(file: string, text: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const content = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    if (content.includes(text)) return content;
    if (Date.now() > deadline) throw new Error(`no line with ${text} in ${file} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
