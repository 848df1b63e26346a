// Summarises V8 .cpuprofile files (node --cpu-prof): the top frames by self time, and by file.
import fs from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly children?: number[];
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const shortUrl = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, 'node_modules/')
    .replace(/^.*\/(src|bench)\//, '$1/');

/** Prints the `top` frames by self time and the files by self time, idle and GC included. */
export function summarise(file: string, top = 25): string {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  const frames = new Map<string, number>();
  const files = new Map<string, number>();
  for (const [id, us] of self) {
    const cf = byId.get(id)?.callFrame;
    if (!cf) continue;
    const where = cf.url ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : '(native)';
    const key = `${cf.functionName || '(anonymous)'} ${where}`;
    frames.set(key, (frames.get(key) ?? 0) + us);
    const f = cf.url ? shortUrl(cf.url) : cf.functionName;
    files.set(f, (files.get(f) ?? 0) + us);
  }
  const busy = total - (frames.get('(idle) (native)') ?? 0);
  const lines = [
    `${path.basename(file)}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy`,
  ];
  lines.push('top frames by self time (% of busy):');
  for (const [k, us] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    if (k.startsWith('(idle)')) continue;
    lines.push(`  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${k}`);
  }
  lines.push('by file (% of busy):');
  for (const [k, us] of [...files].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    if (k === '(idle)') continue;
    lines.push(`  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${k}`);
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const args = process.argv.slice(2);
  if (args.length === 0) {
    process.stderr.write('usage: profile-summary.ts <file.cpuprofile | folder>…\n');
    process.exit(2);
  }
  for (const a of args) {
    const list = fs.statSync(a).isDirectory()
      ? fs
          .readdirSync(a)
          .filter((f) => f.endsWith('.cpuprofile'))
          .map((f) => path.join(a, f))
      : [a];
    for (const f of list) process.stdout.write(`${summarise(f)}\n\n`);
  }
}
