// `pgwarden passwd`: a password read from the terminal (asked twice) or stdin, printed as its SCRAM-SHA-256 verifier.
import { createScramVerifier } from '../auth/scram-verifier.js';
import { EXIT_CONFIG } from './command-outcome.js';

/** All of stdin as UTF-8, without its last line break (`\n` or `\r\n`). */
async function readAll(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * The action of `pgwarden passwd`: reads the password (hidden and asked twice on a terminal,
 * src/terminal-prompt.ts; else all of stdin) and prints `SCRAM-SHA-256$<iterations>:<salt>$<stored>:<server>`
 * (RFC 5802/7677, as Postgres stores it) for `users.<name>.scram`. `iterations` is the PBKDF2
 * count as typed (a non-positive or non-integer count throws RangeError). Exits 2 for an empty
 * password or answers that differ, 130 when the prompt is aborted (Ctrl-C).
 */
export async function passwdAction(opts: { iterations: string }): Promise<void> {
  let password: string;
  if (process.stdin.isTTY) {
    const { askNewPassword, hiddenLineReader } = await import('../terminal-prompt.js');
    const reader = hiddenLineReader(process.stdin, process.stderr);
    const asked = await askNewPassword((prompt) => reader.ask(prompt));
    reader.close();
    if (!asked.ok) {
      process.stderr.write(`pgwarden passwd: ${asked.message}\n`);
      process.exit(asked.aborted ? 130 : EXIT_CONFIG);
    }
    password = asked.password;
  } else password = await readAll();
  if (password === '') {
    process.stderr.write('empty password\n');
    process.exit(EXIT_CONFIG);
  }
  process.stdout.write(`${createScramVerifier(password, { iterations: Number(opts.iterations) })}\n`);
}
