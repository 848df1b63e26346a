// Child process: logs in, stops reading, writes MB of one Query; prints the bytes the server took, then how many queries it answered once read.
import { BackendCode } from '../../src/wire/codes.js';
import { query } from '../../src/wire/frontend-encode.js';
import { RawClient } from './raw-client.js';

const [port, user, database, sql, mb, readAfter] = process.argv.slice(2);
const c = await RawClient.connect(Number(port));
await c.login({ user: user as string, database: database as string }, user as string);
c.socket.pause();
const message = query(sql as string);
const batch = Buffer.concat(Array.from({ length: Math.ceil((1 << 20) / message.length) }, () => message));
const total = Number(mb) << 20;
let written = 0;
while (written < total) {
  c.socket.write(batch);
  written += batch.length;
}
let last = -1;
// Until the server has taken nothing more for 3 s (or 45 s in all).
for (let i = 0; i < 15; i++) {
  await new Promise((r) => setTimeout(r, 3000));
  const now = written - c.socket.writableLength;
  if (now === last) break;
  last = now;
}
// Then, when asked, read: every query is answered in turn, the session goes on (frames counted as they arrive).
const sent = written / message.length;
c.socket.resume();
let answered = 0;
const deadline = Date.now() + 30_000;
while (readAfter === 'read' && answered < sent && !c.closed && Date.now() < deadline) {
  const f = await c.next(30_000).catch(() => undefined);
  if (!f) break;
  if (f.code === BackendCode.ReadyForQuery) answered++;
}
console.log(JSON.stringify({ written, taken: last, closed: c.closed, sent, answered }));
c.end();
process.exit(0);
