// The env file a config names (`env_file`): NAME=value lines that `${NAME}` references read when the environment lacks them; the demo records its ports there.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Reads an env file: `NAME=value` lines (blank lines and `#` comments skipped; the value is the
 * rest of the line, unquoted). Undefined when the file does not exist; a line of another shape
 * is a problem.
 */
export function readEnvFile(
  file: string,
): { values: Record<string, string>; problems: string[] } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return { values: {}, problems: [`env_file ${file}: cannot read: ${(e as Error).message}`] };
  }
  const values: Record<string, string> = {};
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (/^\s*(#.*)?$/.test(line)) return;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m?.[1] === undefined) problems.push(`env_file ${file}:${i + 1}: expected NAME=value`);
    else values[m[1]] = m[2] ?? '';
  });
  return { values, problems };
}

/**
 * The environment `${NAME}` reads for config `file` whose parsed YAML is `raw`: the values of its
 * `env_file` (relative to the config) under `env`'s own, which win; `unset(name)` is the message
 * for a name found in neither. Problems: an env file that cannot be read or has a bad line.
 */
export function environmentWith(
  raw: unknown,
  file: string,
  env: NodeJS.ProcessEnv,
): { env: NodeJS.ProcessEnv; problems: string[]; unset: (name: string) => string } {
  const envFile =
    raw !== null && typeof raw === 'object' && 'env_file' in raw
      ? (raw as { env_file: unknown }).env_file
      : undefined;
  if (typeof envFile !== 'string')
    return { env, problems: [], unset: (name) => `environment variable ${name} is not set` };
  const abs = path.resolve(path.dirname(path.resolve(file)), envFile);
  const read = readEnvFile(abs);
  const unset = (name: string) =>
    read
      ? `environment variable ${name} is not set, nor in env_file ${abs}`
      : `environment variable ${name} is not set, and env_file ${abs} does not exist` +
        (path.basename(abs) === DEMO_ENV_FILE
          ? ' (`npm start` writes it while the demo runs; is it running?)'
          : '');
  // The environment wins, but a variable set empty counts as unset there, as `${NAME}` reads it.
  const merged: NodeJS.ProcessEnv = { ...read?.values };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') merged[k] = v;
  return { env: merged, problems: read?.problems ?? [], unset };
}

/** The file name under which `pgwarden demo` records the ports it uses (the demo config's `env_file`). */
export const DEMO_ENV_FILE = 'demo.env';

/**
 * Writes `values` to `file` as NAME=value lines under a comment saying who wrote them (mode 0600,
 * the folder made when missing). Throws the fs error when it cannot write.
 */
export function writeEnvFile(file: string, values: Readonly<Record<string, string>>, comment: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const lines = [`# ${comment}`, ...Object.entries(values).map(([k, v]) => `${k}=${v}`), ''];
  fs.writeFileSync(file, lines.join('\n'), { mode: 0o600 });
}
