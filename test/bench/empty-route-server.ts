/**
 * The machine's HTTP ceiling for a signing request, as its own process: a bare Fastify server whose one POST
 * route has sign-message's path shape and answers a signature-sized JSON object, with nothing else (no auth, no
 * schema, no enclave). `service-bench.ts` starts it, loads it like the service, and stops it. Prints its port.
 */
import Fastify from 'fastify';

const SIGNATURE = `0x${'ab'.repeat(65)}`;
const app = Fastify({ logger: false });
app.post('/v1/wallets/:id/sign-message', async () => ({ signature: SIGNATURE }));
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
