import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Keypair, PublicKey } from '@solana/web3.js';
import { ChainInputError } from '../chain-input-error.ts';
import { parseSolanaAddress } from './parse-solana-address.ts';

describe('parseSolanaAddress', () => {
  it('accepts on-curve and off-curve 32-byte keys', () => {
    const key = Keypair.generate().publicKey;
    assert.ok(parseSolanaAddress(key.toBase58(), 'to').equals(key));
    const [pda] = PublicKey.findProgramAddressSync([Buffer.from('vault')], key);
    assert.ok(parseSolanaAddress(pda.toBase58(), 'to').equals(pda));
    assert.ok(parseSolanaAddress('11111111111111111111111111111111', 'to').equals(PublicKey.default));
  });

  it('refuses what is not Base58 of exactly 32 bytes, naming the field', () => {
    // A fixed key of 44 characters: a random one can be 43, and one of those with a small first byte still decodes
    // to 32 bytes with a digit appended (×58), which made this test fail about once in a hundred runs.
    const key = new PublicKey(Buffer.alloc(32, 0xff)).toBase58();
    assert.equal(key.length, 44);
    for (const bad of [
      `${key}1`,
      key.slice(0, 31),
      '0OIl'.repeat(10),
      '0x' + 'ab'.repeat(20),
      '',
      7,
      null,
      'z'.repeat(44),
    ]) {
      assert.throws(
        () => parseSolanaAddress(bad, 'tokenAddress'),
        (error) => error instanceof ChainInputError && error.field === 'tokenAddress',
        String(bad),
      );
    }
  });
});
