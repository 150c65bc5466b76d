/**
 * The in-process signing rate of a primitive on every core: one worker thread per core, each signing one
 * 32-byte digest after another for `seconds`, with no I/O. The ceiling the service's HTTP figure is
 * compared with.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

export type RawPrimitive =
  | 'libsecp256k1'
  | 'noble-secp256k1'
  | 'libsecp256k1-sign+recover'
  | 'libsodium-ed25519'
  | 'libsodium-ed25519-sign+verify';

// Plain JavaScript evaluated in each worker (tsx does not reach worker threads): load, warm up, count.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { randomBytes } = require('node:crypto');
(async () => {
  const key = randomBytes(32); key[0] = 1;
  const digest = randomBytes(32);
  let sign;
  if (workerData.primitive === 'noble-secp256k1') {
    const { secp256k1 } = await import('@noble/curves/secp256k1.js');
    sign = () => secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
  } else if (workerData.primitive.startsWith('libsodium-ed25519')) {
    // The enclave's Ed25519 (enclave/native-crypto.ts): libsodium, detached signature of a short message, then
    // (as the enclave does before answering) its verification.
    const sodium = require('sodium-native');
    const pk = Buffer.alloc(32); const sk = Buffer.alloc(64); const sig = Buffer.alloc(64);
    sodium.crypto_sign_seed_keypair(pk, sk, key);
    const message = Buffer.from('benchmark message: sign me');
    sign = workerData.primitive === 'libsodium-ed25519'
      ? () => sodium.crypto_sign_detached(sig, message, sk)
      : () => { sodium.crypto_sign_detached(sig, message, sk); sodium.crypto_sign_verify_detached(sig, message, pk); };
  } else {
    // The enclave's own binding (enclave/native-crypto.ts): native libsecp256k1.
    const secp = require('secp256k1/bindings');
    sign = workerData.primitive === 'libsecp256k1'
      ? () => secp.ecdsaSign(digest, key)
      : () => { const s = secp.ecdsaSign(digest, key); secp.ecdsaRecover(s.signature, s.recid, digest, false); };
  }
  for (let i = 0; i < 200; i++) sign();
  const until = Date.now() + workerData.ms;
  let n = 0;
  while (Date.now() < until) { sign(); n++; }
  parentPort.postMessage(n);
})();
`;

/** Signatures per second summed over one worker per core. */
export async function rawSigningRate(primitive: RawPrimitive, seconds: number): Promise<number> {
  const threads = availableParallelism();
  const counts = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(WORKER, { eval: true, workerData: { primitive, ms: seconds * 1000 } });
          worker.once('message', (n: number) => {
            resolve(n);
            void worker.terminate();
          });
          worker.once('error', reject);
        }),
    ),
  );
  return counts.reduce((a, b) => a + b, 0) / seconds;
}
