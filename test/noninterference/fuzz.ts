// `npm run fuzz -- --minutes N [--seed S] [--record]`: the noninterference generator for longer than CI, on its own embedded PostgreSQL.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { startEmbeddedPostgres } from '../../src/embedded/postgres.js';
import { fuzz } from './fuzz-run.js';
import { Harness, summarize } from './harness.js';
import { NI_CORPUS } from './sources.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    seed: { type: 'string' },
    batch: { type: 'string', default: '2000' },
    record: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
const batch = Number(values.batch);
let seed = values.seed ? Number(values.seed) : Date.now() % 2 ** 31;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-fuzz-'));
fs.chmodSync(base, 0o755);
const server = await startEmbeddedPostgres({
  dataDir: path.join(base, 'data'),
  persistent: false,
  settings: { max_connections: '100' },
});
const harness = await Harness.start(server, 'nif');
const deadline = Date.now() + minutes * 60_000;
let runs = 0;
let allowed = 0;
let statements = 0;
let leaks = 0;
let failed = false;
try {
  while (Date.now() < deadline) {
    const r = await fuzz(harness, seed, batch);
    const t = summarize(r.outcomes);
    runs += r.outcomes.length;
    allowed += t.allowed + t.masked;
    statements += r.statements;
    leaks += t.leak;
    console.log(r.text);
    if (r.newLeaks.length > 0) failed = true;
    if (values.record && r.newLeaks.length > 0) {
      const file = path.join(NI_CORPUS, 'cases.yaml');
      const doc = YAML.parseDocument(fs.readFileSync(file, 'utf8'));
      for (const l of r.newLeaks) {
        const sql = l.shrunk.replace(/ \((simple|extended-text|extended-binary), (alice|bob)\)$/, '');
        (doc.get('cases') as YAML.YAMLSeq).add(
          doc.createNode({
            id: `gen-${seed}-${l.path}`,
            sql,
            found: `seed=${seed} path=${l.path}`,
            reveals: l.outcome.diff ?? '',
          }),
        );
      }
      fs.writeFileSync(file, doc.toString());
      console.log(`recorded ${r.newLeaks.length} case(s) in ${file}`);
    }
    seed = (seed + 1) % 2 ** 31;
  }
} finally {
  await harness.close();
  await server.stop();
  fs.rmSync(base, { recursive: true, force: true });
}
console.log(
  `fuzz: ${statements} statements, ${runs} runs, allowed or masked ${allowed} (${((allowed / Math.max(runs, 1)) * 100).toFixed(1)}%), leaks ${leaks}${failed ? ' (new ones above)' : ''}`,
);
process.exit(failed || allowed < runs / 3 ? 1 : 0);
