// pgwarden in its own process, started as `pgwarden serve` does, answering { stats } requests over IPC.
import { makeAuditLogger, makeLogger } from '../src/logger.js';
import { loadConfig } from '../src/policy/config-load.js';
import { gateMemoStats } from '../src/proxy/gate-memo.js';
import { startProxy } from '../src/proxy/server.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: proxy-process.ts <pgwarden.yaml>\n');
  process.exit(2);
}
const logger = makeLogger();
const audit = makeAuditLogger();
const proxy = await startProxy(loadConfig(file), logger, { auditLogger: audit.logger });
process.on('message', (m) => {
  if (m === 'stats')
    process.send?.({ stats: proxy.stats(), memo: gateMemoStats(), sessions: proxy.sessionCount() });
});
process.on('SIGTERM', () => {
  void proxy.close(500).then(() => {
    audit.close();
    process.exit(0);
  });
});
process.send?.('ready');
