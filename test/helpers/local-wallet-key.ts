/**
 * Test doubles of what the signing service hands a chain adapter: a wallet key that signs locally with noble, the
 * way the enclave does (secp256k1: the 32-byte digest as is, low-s, with its recovery bit; ed25519: the message),
 * and pool steps that run inline and record which ran.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { PoolRunner, PoolSteps, WalletFamily, WalletKey } from '../../chains/wallet-family.ts';

/** A key of `family`'s scheme from a 32-byte seed, with the address the family derives for it. */
export function localWalletKey(family: Pick<WalletFamily, 'scheme' | 'deriveAddress'>, seed: Uint8Array): WalletKey {
  const secp = family.scheme === 'DKLS';
  const publicKey = secp ? secp256k1.getPublicKey(seed, false) : ed25519.getPublicKey(seed);
  const refuse = (curve: string) => () => Promise.reject(new Error(`a ${family.scheme} key does not sign ${curve}`));
  return {
    address: family.deriveAddress(bytesToHex(publicKey)),
    publicKey,
    signSecp256k1: secp
      ? async (digest) => {
          if (digest.length !== 32) throw new Error(`a DKLS message must be a 32-byte digest, got ${digest.length}`);
          const recovered = secp256k1.sign(digest, seed, { prehash: false, format: 'recovered' });
          return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
        }
      : refuse('secp256k1'),
    signEd25519: secp ? refuse('ed25519') : async (message) => ed25519.sign(message, seed),
  } satisfies WalletKey;
}

/** `steps` as an adapter calls them, run inline; `ran` lists the names of the steps called, in order. */
export function inlineSteps<Steps extends PoolSteps>(steps: Steps): { steps: PoolRunner<Steps>; ran: string[] } {
  const ran: string[] = [];
  const runner = Object.fromEntries(
    Object.entries(steps).map(([name, step]) => [
      name,
      async (...args: never) => {
        ran.push(name);
        return (step as (...a: never) => unknown)(...args);
      },
    ]),
  ) as PoolRunner<Steps>;
  return { steps: runner, ran };
}
