import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { refused } from '../../test/helpers/chain-input-refusal.ts';
import { localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { ChainRpcError } from '../payment-chain.ts';
import { solanaPayments } from './solana-payments.ts';
import { solanaSigner } from './solana-signer.ts';

const SEED = Buffer.alloc(32, 7);
const key = localWalletKey(solanaSigner, SEED);
const BLOCKHASH = bs58.encode(Buffer.alloc(32, 9));
const TO = Keypair.generate().publicKey.toBase58();

/** An unsigned SOL transfer from the wallet, base64. */
function transfer(from = key.address): string {
  return new Transaction({ feePayer: new PublicKey(from), recentBlockhash: BLOCKHASH })
    .add(SystemProgram.transfer({ fromPubkey: new PublicKey(from), toPubkey: new PublicKey(TO), lamports: 5 }))
    .serialize({ requireAllSignatures: false })
    .toString('base64');
}

describe('solanaPayments', () => {
  it("a request without network uses the key's environment's: SOLANA_DEVNET for development keys, SOLANA for production ones", () => {
    const body = { to: TO, value: '5' };
    assert.equal(solanaPayments.transferTarget(body, 'development').chainRef, 'SOLANA_DEVNET');
    assert.equal(solanaPayments.transferTarget(body, 'production').chainRef, 'SOLANA');
    assert.equal(solanaPayments.transferTarget({ ...body, network: 'SOLANA' }, 'development').chainRef, 'SOLANA');
    const tx = transfer();
    assert.equal(
      solanaPayments.partnerTransaction({ transaction: tx }, key.address, 'development').chainRef,
      'SOLANA_DEVNET',
    );
    assert.equal(solanaPayments.partnerTransaction({ transaction: tx }, key.address, 'production').chainRef, 'SOLANA');
  });

  it('refuses EVM fields and token mistakes, naming the body field', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ to: TO, value: '1', chainId: '1' }, 'chainId'],
      [{ to: TO, value: '1', kind: 'ERC20', tokenAddress: TO }, 'kind'],
      [{ to: TO, value: '1', kind: 'SPL' }, 'tokenAddress'],
      [{ to: TO, value: '-1' }, 'value'],
    ];
    for (const [body, field] of cases) {
      assert.equal(refused(() => solanaPayments.transferTarget(body as never, 'production')).field, field);
    }
    assert.equal(
      refused(() => solanaPayments.partnerTransaction({ transaction: {} }, key.address, 'production')).field,
      'transaction',
    );
    const notSigner = transfer(Keypair.generate().publicKey.toBase58());
    assert.equal(
      refused(() => solanaPayments.partnerTransaction({ transaction: notSigner }, key.address, 'production')).field,
      'transaction',
    );
  });

  it("a partner's transaction records its blockhash and no to, value or nonce", () => {
    const partner = solanaPayments.partnerTransaction({ transaction: transfer() }, key.address, 'production');
    assert.deepEqual(
      [partner.nonce, partner.to, partner.value, partner.recentBlockhash],
      [null, null, null, BLOCKHASH],
    );
  });

  it('signs the message bytes with ed25519; web3.js verifies the result and its id is the first signature', async () => {
    const payload = solanaPayments.transferPayload(
      {
        family: 'SOLANA',
        transaction: transfer(),
        blockhash: BLOCKHASH,
        lastValidBlockHeight: 90,
        computeUnitPrice: 0,
      },
      null,
    );
    assert.deepEqual(
      solanaPayments.transferValidity({
        family: 'SOLANA',
        transaction: payload.transaction,
        blockhash: BLOCKHASH,
        lastValidBlockHeight: 90,
        computeUnitPrice: 0,
      }),
      { recentBlockhash: BLOCKHASH, lastValidBlockHeight: 90 },
    );
    const request = solanaPayments.signatureRequest(payload, key.address);
    if (request.curve !== 'ed25519') throw new Error('Solana signs ed25519');
    const signed = request.attach(await key.signEd25519(request.message));
    const tx = Transaction.from(Buffer.from(signed.signedTransaction, 'base64'));
    assert.equal(tx.verifySignatures(), true);
    assert.equal(signed.hash, bs58.encode(tx.signature!));
    assert.throws(() => request.attach(new Uint8Array(10)), { code: 'SIGNATURE_APPLY_FAILED' });
  });

  it('reads a node refusal: an expired blockhash is looked up, no answer is unanswered, the rest are rejections', () => {
    assert.equal(solanaPayments.sendVerdict(new ChainRpcError('final', 'BLOCKHASH_EXPIRED', 'gone')), 'look-up');
    assert.equal(solanaPayments.sendVerdict(new ChainRpcError('transient', 'RPC_UNAVAILABLE', 'down')), 'unanswered');
    assert.equal(solanaPayments.sendVerdict(new ChainRpcError('final', 'TRANSACTION_REJECTED', 'no')), 'rejected');
  });

  it('names its chain by network; a CHAINS_FILE entry without environment takes the network default', () => {
    assert.deepEqual(solanaPayments.recordChain('SOLANA'), { chainId: null, network: 'SOLANA' });
    assert.equal(solanaPayments.chainField, 'network');
    assert.equal(solanaPayments.isDevnet('SOLANA_DEVNET', 'any'), true);
    assert.equal(solanaPayments.isDevnet('SOLANA', 'production'), false);
    const read = solanaPayments.chainsFile.read;
    assert.equal(read({ network: 'SOLANA_DEVNET', rpcUrl: 'http://127.0.0.1:1' }).environment, 'any');
    assert.equal(read({ network: 'SOLANA', rpcUrl: 'http://127.0.0.1:1' }).environment, 'production');
    assert.equal(read({ network: 'SOLANA', rpcUrl: 'http://127.0.0.1:1', environment: 'any' }).environment, 'any');
    assert.equal(read({ network: 'SOLANA', rpcUrl: 'http://127.0.0.1:1' }).expiryProofAfterMs, undefined);
    assert.equal(
      read({ network: 'SOLANA', rpcUrl: 'http://127.0.0.1:1', expiryProofAfterMs: 1500 }).expiryProofAfterMs,
      1500,
    );
  });
});
