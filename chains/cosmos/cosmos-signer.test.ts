import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { Secp256k1, Secp256k1Signature } from '@cosmjs/crypto';
import { inlineSteps, localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { cosmosSigner } from './cosmos-signer.ts';

const key = localWalletKey(cosmosSigner, new Uint8Array(32).fill(21));
const sha256 = (bytes: Uint8Array) => new Uint8Array(createHash('sha256').update(bytes).digest());
const verify = (signature: string, digest: Uint8Array) =>
  Secp256k1.verifySignature(Secp256k1Signature.fromFixedLength(Buffer.from(signature, 'hex')), digest, key.publicKey);

describe('cosmosSigner', () => {
  it('derives a Bech32 address under the prefix asked for, cosmos by default', () => {
    const hex = Buffer.from(key.publicKey).toString('hex');
    assert.match(cosmosSigner.deriveAddress(hex), /^cosmos1[02-9ac-hj-np-z]{38}$/);
    assert.match(cosmosSigner.deriveAddress(hex, 'osmo'), /^osmo1[02-9ac-hj-np-z]{38}$/);
  });

  it('signs the SHA-256 of the UTF-8 message as r‖s that @cosmjs verifies', async () => {
    const signature = await cosmosSigner.signMessage('hello ✓', key);
    assert.match(signature, /^[0-9a-f]{128}$/);
    assert.equal(await verify(signature, sha256(Buffer.from('hello ✓'))), true);
    assert.equal(await verify(signature, sha256(Buffer.from('hello'))), false);
  });

  it('signs a raw 32-byte digest (a SignDoc hash) as is', async () => {
    const digest = sha256(Buffer.from('sign doc bytes'));
    assert.equal(await verify(await cosmosSigner.signRaw(digest, key), digest), true);
    assert.equal(cosmosSigner.rawDigestBytes, 32);
  });

  it('has no sign-transaction and points to sign-raw instead', () => {
    assert.equal(cosmosSigner.prepareTransaction, undefined);
    assert.deepEqual(inlineSteps(cosmosSigner.poolSteps).steps, {});
    assert.match(cosmosSigner.unsupportedHints?.['sign-transaction'] ?? '', /sign-raw \(walletType COSMOS\)/);
  });
});
