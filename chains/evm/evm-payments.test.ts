import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { recoverTransactionAddress, type TransactionSerialized, keccak256 as viemKeccak } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { refused } from '../../test/helpers/chain-input-refusal.ts';
import { localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { ChainRpcError, type EvmUnsignedPayment } from '../payment-chain.ts';
import { evmPayments } from './evm-payments.ts';
import { evmSigner } from './evm-signer.ts';

// Anvil's first two accounts.
const SEED = Buffer.from('ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', 'hex');
const OTHER = Buffer.from('59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d', 'hex');
const account = privateKeyToAccount(`0x${SEED.toString('hex')}`);
const key = localWalletKey(evmSigner, SEED);
const RECIPIENT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

const unsigned: EvmUnsignedPayment = {
  family: 'EVM',
  chainId: 31337,
  type: 2,
  to: RECIPIENT,
  value: '5',
  data: '0x',
  gasLimit: '25200',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000000',
};

describe('evmPayments', () => {
  it('reads a transfer: chain id as given, kind from the token, each mistake naming its body field', () => {
    assert.deepEqual(evmPayments.transferTarget({ to: RECIPIENT, value: '5', chainId: 31337 }, 'production'), {
      chainRef: '31337',
      intent: { kind: 'NATIVE', to: RECIPIENT, value: '5' },
      nonce: null,
    });
    // The EVM fields a body fixes ride with the intent; the nonce asked for beside it.
    assert.deepEqual(
      evmPayments.transferTarget(
        { to: RECIPIENT, value: '5', chainId: 1, nonce: 3, maxPriorityFeePerGas: '2', gasLimit: '30000' },
        'production',
      ),
      {
        chainRef: '1',
        intent: {
          kind: 'NATIVE',
          to: RECIPIENT,
          value: '5',
          evm: { type: 2, gasLimit: '30000', maxPriorityFeePerGas: '2' },
        },
        nonce: 3,
      },
    );
    const token = evmPayments.transferTarget(
      { to: RECIPIENT, value: '5', chainId: '1', tokenAddress: RECIPIENT },
      'development',
    );
    assert.equal(token.intent.kind, 'ERC20');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ to: RECIPIENT, value: '0', chainId: '1' }, 'value'],
      [{ to: RECIPIENT, value: '1.5', chainId: '1' }, 'value'],
      [{ to: RECIPIENT, value: '1', chainId: '1', kind: 'SPL', tokenAddress: RECIPIENT }, 'kind'],
      [{ to: RECIPIENT, value: '1', chainId: '1', kind: 'ERC20' }, 'tokenAddress'],
      [{ to: RECIPIENT, value: '1', chainId: '1', tokenAddress: RECIPIENT, kind: 'NATIVE' }, 'tokenAddress'],
      [{ to: RECIPIENT, value: '1', chainId: '1', network: 'SOLANA' }, 'network'],
      [{ to: RECIPIENT, value: '1' }, 'chainId'],
      [{ to: RECIPIENT, value: '1', chainId: '0x1' }, 'chainId'],
      [{ to: RECIPIENT, value: '1', chainId: '01' }, 'chainId'],
    ];
    for (const [body, field] of cases) {
      const e = refused(() => evmPayments.transferTarget(body as never, 'production'));
      assert.equal(e.field, field, `${JSON.stringify(body)}: ${e.message}`);
    }
  });

  it("reads a partner's transaction: its chain id and fixed nonce, what the record shows; a bad field is named inside transaction", () => {
    const tx = { ...unsigned, family: undefined, nonce: 9 } as Record<string, unknown>;
    delete tx['family'];
    const partner = evmPayments.partnerTransaction({ transaction: tx }, account.address, 'production');
    assert.deepEqual(
      [partner.chainRef, partner.nonce, partner.to, partner.value, partner.recentBlockhash],
      ['31337', 9, RECIPIENT, '5', null],
    );
    assert.deepEqual(partner.payload, { family: 'EVM', transaction: tx });
    assert.equal(
      refused(() =>
        evmPayments.partnerTransaction({ transaction: { ...tx, gasPrice: '1' } }, account.address, 'production'),
      ).field,
      'transaction.gasPrice',
    );
    assert.equal(
      refused(() => evmPayments.partnerTransaction({ transaction: 'AAAA' }, account.address, 'production')).field,
      'transaction',
    );
    assert.equal(
      refused(() =>
        evmPayments.partnerTransaction({ transaction: tx, network: 'SOLANA' }, account.address, 'production'),
      ).field,
      'network',
    );
  });

  it('a transfer is signed with the nonce its record allocated; the signer is recovered and the hash is keccak256', async () => {
    const payload = evmPayments.transferPayload(unsigned, 4);
    assert.equal(payload.transaction.nonce, 4);
    assert.deepEqual(evmPayments.transferValidity(unsigned), { recentBlockhash: null, lastValidBlockHeight: null });
    const request = evmPayments.signatureRequest(payload, account.address);
    assert.equal(request.curve, 'secp256k1');
    if (request.curve !== 'secp256k1') return;
    const signed = request.attach(await key.signSecp256k1(request.message));
    const raw = signed.signedTransaction as TransactionSerialized;
    assert.equal(await recoverTransactionAddress({ serializedTransaction: raw }), account.address);
    assert.equal(signed.hash, viemKeccak(raw));
  });

  it("another key's signature is SIGNER_MISMATCH and a malformed one SIGNATURE_APPLY_FAILED: never returned", async () => {
    const request = evmPayments.signatureRequest(evmPayments.transferPayload(unsigned, 0), account.address);
    if (request.curve !== 'secp256k1') throw new Error('EVM signs secp256k1');
    const other = localWalletKey(evmSigner, OTHER);
    assert.throws(() => request.attach({ rs: new Uint8Array(64), recovery: 0 }), { code: 'SIGNATURE_APPLY_FAILED' });
    const foreign = await other.signSecp256k1(request.message);
    assert.throws(() => request.attach(foreign), { code: 'SIGNER_MISMATCH' });
  });

  it('reads a node refusal: no answer is unanswered, "nonce too low" is looked up, the rest are rejections', () => {
    assert.equal(evmPayments.sendVerdict(new ChainRpcError('transient', 'RPC_UNAVAILABLE', 'down')), 'unanswered');
    assert.equal(evmPayments.sendVerdict(new ChainRpcError('final', 'NONCE_TOO_LOW', 'nonce too low')), 'look-up');
    assert.equal(
      evmPayments.sendVerdict(new ChainRpcError('final', 'INSUFFICIENT_NATIVE_BALANCE', 'no funds')),
      'rejected',
    );
  });

  it('names its chain by chain id in records, sentences, CHAINS_FILE entries and keys', () => {
    assert.deepEqual(evmPayments.recordChain('8453'), { chainId: '8453', network: null });
    assert.equal(evmPayments.describeChain('8453'), 'EVM chain 8453');
    assert.equal(evmPayments.chainField, 'chainId');
    assert.equal(evmPayments.isDevnet('11155111', 'development'), true);
    assert.equal(evmPayments.isDevnet('1', 'any'), false);
    assert.deepEqual(
      evmPayments.chainsFile.read({ chainId: 1, rpcUrl: 'http://127.0.0.1:1', environment: 'production' }),
      { chainRef: '1', rpcUrl: 'http://127.0.0.1:1', environment: 'production' },
    );
    assert.equal(
      evmPayments.createChain({ chainRef: '1', rpcUrl: 'http://127.0.0.1:1', environment: 'production' }).key,
      'evm:1',
    );
  });
});
