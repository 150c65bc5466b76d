/**
 * The JSON body parser's cost per request beside Fastify's default parser, in one process on the same
 * bodies (so that a busy machine slows both alike). Prints figures; asserts nothing.
 * Run: `node --import tsx test/bench/json-body-parse.ts` (BENCH_MS: time per body and parser, default 1000).
 *
 * Both columns include what Fastify does before calling the parser: the default parser gets the body
 * decoded as a string, ours gets a copied Buffer.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { parseJsonBody } from '../../api/plugins/json-body.ts';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';

const require = createRequire(import.meta.url);
/** Fastify's own default (secure-json-parse with its prototype checks), as Fastify calls it. */
const { defaultParsers } = require('fastify/lib/content-type-parser.js') as {
  defaultParsers: {
    getDefaultJsonParser: (
      proto: string,
      ctor: string,
    ) => (req: unknown, body: string, done: (err: Error | null, value?: unknown) => void) => void;
  };
};
const fastifyDefault = defaultParsers.getDefaultJsonParser('error', 'error');

const MS = Number(process.env['BENCH_MS'] ?? 1000);

const bodies: Record<string, Buffer> = {
  'sign-message, 20 B message': Buffer.from(JSON.stringify({ message: 'hello from a partner' })),
  'sign-typed-data, EIP-712 Mail': Buffer.from(JSON.stringify({ typedData: EIP712_MAIL })),
  'sign-message, 64 KiB non-ASCII message': Buffer.from(JSON.stringify({ message: 'é☃'.repeat(13_000) })),
  'sign-transaction, 256 KiB base64': Buffer.from(
    JSON.stringify({ transaction: randomBytes(192 * 1024).toString('base64') }),
  ),
};

function rate(fn: () => void): number {
  for (let i = 0; i < 200; i++) fn();
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < MS) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    t = performance.now();
  }
  return (n / (t - t0)) * 1000;
}

console.log(
  'body'.padEnd(42),
  'ours/s'.padStart(12),
  'fastify/s'.padStart(12),
  'ours µs'.padStart(10),
  'ratio'.padStart(7),
);
for (const [name, body] of Object.entries(bodies)) {
  const ours = rate(() => {
    parseJsonBody(Buffer.concat([body], body.length), 'application/json');
  });
  const theirs = rate(() => {
    fastifyDefault({}, body.toString('utf8'), (err) => {
      if (err) throw err;
    });
  });
  console.log(
    name.padEnd(42),
    ours.toFixed(0).padStart(12),
    theirs.toFixed(0).padStart(12),
    (1e6 / ours).toFixed(2).padStart(10),
    (ours / theirs).toFixed(2).padStart(7),
  );
}
