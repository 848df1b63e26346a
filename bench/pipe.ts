// A bare TCP pass-through from a local port to PostgreSQL, no logic: the floor of any Node proxy.
import net from 'node:net';

const [listenPort, upstreamHost, upstreamPort] = process.argv.slice(2);
if (!listenPort || !upstreamHost || !upstreamPort) {
  process.stderr.write('usage: pipe.ts <listen-port> <upstream-host> <upstream-port>\n');
  process.exit(2);
}

const server = net.createServer({ noDelay: true }, (client) => {
  const upstream = net.connect({ host: upstreamHost, port: Number(upstreamPort), noDelay: true });
  client.pipe(upstream);
  upstream.pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
server.listen(Number(listenPort), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => process.exit(0));
