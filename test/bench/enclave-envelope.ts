/**
 * Cost of the enclave's envelope operations on one thread, per record format: sealing, opening, re-wrapping (a
 * master-key rotation's step) and a whole worker signature (`signWithShares`: unpack, open two records, combine,
 * sign, verify, wipe). Records of the earlier format (AES-256-GCM in both layers, node:crypto) are built as key
 * store schema 1 wrote them; records of the current format are XChaCha20-Poly1305 (libsodium).
 *
 *   node --import tsx test/bench/enclave-envelope.ts [--rounds 5] [--ms 300]
 *
 * Each figure is CPU time per operation, the best of `rounds` runs of `ms` milliseconds.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  AES_256_GCM,
  createKeyRing,
  encodeAad,
  gcmEncrypt,
  masterKeyId,
  packSealed,
  rewrap,
  type SealedBlob,
  seal,
  shareContext,
  unseal,
} from '../../enclave/envelope.ts';
import type { Scheme } from '../../enclave/protocol.ts';
import { signWithShares } from '../../enclave/sign.ts';
import { randomSplitKey } from '../helpers/legacy-key-store.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, ms: { type: 'string', default: '300' } },
});
const rounds = Number(values.rounds);
const runMs = Number(values.ms);

const masterKey = new Uint8Array(randomBytes(32));
const nextKey = new Uint8Array(randomBytes(32));
const ring = createKeyRing([masterKey, nextKey], masterKeyId(nextKey));

/** A record as key store schema 1 sealed it (AES-256-GCM in both layers), labeled as the enclave labels it. */
function legacySeal(context: ReturnType<typeof shareContext>, plaintext: Uint8Array): SealedBlob {
  const dataKey = new Uint8Array(randomBytes(32));
  const iv = new Uint8Array(randomBytes(12));
  const dekIv = new Uint8Array(randomBytes(12));
  return {
    keyId: masterKeyId(masterKey),
    wrapCipher: AES_256_GCM,
    dekIv,
    wrappedKey: gcmEncrypt(masterKey, dekIv, encodeAad('key', context), dataKey),
    dataCipher: AES_256_GCM,
    iv,
    ciphertext: gcmEncrypt(dataKey, iv, encodeAad('data', context), plaintext),
  };
}

/**
 * CPU microseconds per call of `fn` (this process's user + system time, so a busy machine disturbs the figure less
 * than it would wall time), best of `rounds` runs.
 */
function measure(fn: () => void): number {
  for (let i = 0; i < 2000; i++) fn();
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round++) {
    let calls = 0;
    const start = process.cpuUsage();
    const until = Date.now() + runMs;
    while (Date.now() < until) {
      for (let i = 0; i < 100; i++) fn();
      calls += 100;
    }
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / calls);
  }
  return best;
}

function print(what: string, legacy: number | undefined, current: number): void {
  const old = legacy === undefined ? '' : `${legacy.toFixed(2).padStart(8)} µs`;
  console.log(`${what.padEnd(52)} ${old.padStart(11)} ${current.toFixed(2).padStart(8)} µs`);
}

const context = shareContext('bench-wallet', 'DKLS', 'service');
const share = new Uint8Array(randomBytes(32));
const legacyRecord = legacySeal(context, share);
const currentRecord = seal(masterKey, context, share);

console.log(`${'CPU per operation, one thread'.padEnd(52)} ${'AES-GCM'.padStart(11)} ${'XChaCha'.padStart(11)}`);
print(
  'seal a 32-byte share (both layers)',
  measure(() => legacySeal(context, share)),
  measure(() => seal(masterKey, context, share)),
);
print(
  'open a sealed share (unseal)',
  measure(() => unseal(masterKey, context, legacyRecord).fill(0)),
  measure(() => unseal(masterKey, context, currentRecord).fill(0)),
);
print(
  're-wrap a data key under the next key',
  measure(() => rewrap(ring, context, legacyRecord)),
  measure(() => rewrap(ring, context, currentRecord)),
);

for (const scheme of ['DKLS', 'ED25519'] as Scheme[]) {
  const { publicKey, service, user } = randomSplitKey(scheme);
  const walletId = `bench-${scheme}`;
  const serviceContext = shareContext(walletId, scheme, 'service');
  const userContext = shareContext(walletId, scheme, 'user');
  const item = (records: SealedBlob[]) => ({
    walletId,
    scheme,
    publicKey: Buffer.from(publicKey).toString('hex'),
    shares: packSealed(records),
    message: new Uint8Array(randomBytes(scheme === 'DKLS' ? 32 : 200)),
  });
  const legacyItem = item([legacySeal(serviceContext, service), legacySeal(userContext, user)]);
  const currentItem = item([seal(masterKey, serviceContext, service), seal(masterKey, userContext, user)]);
  print(
    `${scheme} signature in a worker (open 2, sign, verify)`,
    measure(() => signWithShares(masterKey, legacyItem)),
    measure(() => signWithShares(masterKey, currentItem)),
  );
}
