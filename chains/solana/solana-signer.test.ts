import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { solanaSigner } from './solana-signer.ts';

const SEED = new Uint8Array(32).fill(41);
const keypair = Keypair.fromSeed(SEED);
const key = localWalletKey(solanaSigner, SEED);
const wallet = { address: key.address, publicKey: key.publicKey };
const BLOCKHASH = 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W';

function transfer(from: PublicKey): string {
  const tx = new Transaction({ feePayer: from, recentBlockhash: BLOCKHASH }).add(
    SystemProgram.transfer({ fromPubkey: from, toPubkey: Keypair.fromSeed(new Uint8Array(32)).publicKey, lamports: 1 }),
  );
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64');
}

describe('solanaSigner', () => {
  it("derives the keypair's Base58 address", () => {
    assert.equal(key.address, keypair.publicKey.toBase58());
  });

  it('signs the UTF-8 bytes of a message with ed25519, as hex', async () => {
    const signature = await solanaSigner.signMessage('hello ✓', key);
    assert.match(signature, /^[0-9a-f]{128}$/);
    assert.equal(ed25519.verify(Buffer.from(signature, 'hex'), Buffer.from('hello ✓'), key.publicKey), true);
    assert.equal(ed25519.verify(Buffer.from(signature, 'hex'), Buffer.from('hello'), key.publicKey), false);
  });

  it('signs raw bytes as they are', async () => {
    const data = new Uint8Array(300).fill(7);
    assert.equal(ed25519.verify(Buffer.from(await solanaSigner.signRaw(data, key), 'hex'), data, key.publicKey), true);
    assert.equal(solanaSigner.rawDigestBytes, undefined);
  });

  it('signs a transaction inline, naming the network the request gives', async () => {
    const prepared = await solanaSigner.prepareTransaction!(
      { transaction: transfer(keypair.publicKey), network: 'SOLANA_DEVNET' },
      wallet,
      {},
    );
    assert.equal(prepared.chainId, 'SOLANA_DEVNET');
    const { signedTransaction } = await prepared.sign(key);
    const expected = Transaction.from(Buffer.from(transfer(keypair.publicKey), 'base64'));
    expected.sign(keypair);
    assert.equal(signedTransaction, expected.serialize().toString('base64'));
    assert.equal(Transaction.from(Buffer.from(signedTransaction!, 'base64')).verifySignatures(), true);

    const unnamed = await solanaSigner.prepareTransaction!({ transaction: transfer(keypair.publicKey) }, wallet, {});
    assert.equal(unnamed.chainId, null);
  });

  it('refuses a transaction the wallet does not sign', async () => {
    const other = new PublicKey(new Uint8Array(32).fill(9));
    await assert.rejects(
      solanaSigner.prepareTransaction!({ transaction: transfer(other) }, wallet, {}),
      (error: unknown) => error instanceof ChainInputError && error.field === 'transaction',
    );
  });
});
