import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  Account,
  Asset,
  BASE_FEE,
  FeeBumpTransaction,
  Keypair,
  Networks,
  Operation,
  Transaction,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import { ChainInputError } from '../chain-input-error.ts';
import { MAX_STELLAR_ENVELOPE_BYTES, prepareStellarTransaction } from './prepare-stellar-transaction.ts';

const source = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 21));
const destination = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 22)).publicKey();

function payment(networkPassphrase = Networks.TESTNET): Transaction {
  return new TransactionBuilder(new Account(source.publicKey(), '100'), { fee: BASE_FEE, networkPassphrase })
    .addOperation(Operation.payment({ destination, asset: Asset.native(), amount: '12.5' }))
    .setTimeout(300)
    .build();
}

function throwsField(xdr: unknown, passphrase: unknown, field: string, message?: RegExp): void {
  assert.throws(
    () => prepareStellarTransaction(xdr as string, passphrase as string),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, field, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
  );
}

describe('prepareStellarTransaction', () => {
  it('hashes like the SDK: SHA-256 of network id ‖ ENVELOPE_TYPE_TX ‖ transaction', () => {
    const tx = payment();
    const prepared = prepareStellarTransaction(tx.toXDR(), Networks.TESTNET);
    assert.deepEqual(prepared, {
      hash: new Uint8Array(tx.hash()),
      envelope: tx.toXDR(),
      networkPassphrase: Networks.TESTNET,
    });
    assert.deepEqual(structuredClone(prepared), prepared, 'plain data, for a chain-pool worker');
    assert.ok(TransactionBuilder.fromXDR(prepared.envelope, Networks.TESTNET) instanceof Transaction);
    const networkId = createHash('sha256').update(Networks.TESTNET).digest();
    const envelopeTypeTx = Buffer.from([0, 0, 0, 2]);
    const base = Buffer.concat([networkId, envelopeTypeTx, tx.toEnvelope().v1().tx().toXDR()]);
    assert.deepEqual(prepared.hash, new Uint8Array(createHash('sha256').update(base).digest()));
  });

  it('gives another hash for another passphrase', () => {
    const xdr = payment().toXDR();
    const testnet = prepareStellarTransaction(xdr, Networks.TESTNET).hash;
    assert.notDeepEqual(prepareStellarTransaction(xdr, Networks.PUBLIC).hash, testnet);
    assert.notDeepEqual(prepareStellarTransaction(xdr, `${Networks.TESTNET} `).hash, testnet);
  });

  it('reads a fee bump envelope and keeps existing signatures', () => {
    const inner = payment();
    inner.sign(source);
    const feeSource = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 23));
    const bump = TransactionBuilder.buildFeeBumpTransaction(feeSource, '1000', inner, Networks.TESTNET);
    const prepared = prepareStellarTransaction(bump.toXDR(), Networks.TESTNET);
    const parsed = TransactionBuilder.fromXDR(prepared.envelope, Networks.TESTNET);
    assert.ok(parsed instanceof FeeBumpTransaction);
    assert.deepEqual(prepared.hash, new Uint8Array(bump.hash()));
    assert.equal(parsed.innerTransaction.signatures.length, 1);
  });

  it('refuses malformed, truncated, extended and garbage XDR', () => {
    const xdr = payment().toXDR();
    const bytes = Buffer.from(xdr, 'base64');
    for (const bad of [
      Buffer.concat([bytes, Buffer.alloc(4)]).toString('base64'),
      bytes.subarray(0, bytes.length - 4).toString('base64'),
      Buffer.alloc(33, 0xee).toString('base64'),
      Buffer.alloc(4).toString('base64'),
      'AAAA',
    ]) {
      throwsField(bad, Networks.TESTNET, 'transaction', /not a valid Stellar transaction envelope/);
    }
    for (const bad of [xdr.slice(0, -1), `${xdr}\n`, xdr.replace(/[+/]/g, '-'), '', '!!!!']) {
      if (bad === xdr) continue;
      throwsField(bad, Networks.TESTNET, 'transaction');
    }
    for (const bad of [undefined, null, 7, [xdr], { xdr }, bytes]) throwsField(bad, Networks.TESTNET, 'transaction');
    for (let size = 4; size < 400; size += 12) {
      const garbage = Buffer.from(Array.from({ length: size }, (_, i) => (i * 97 + size) & 0xff));
      throwsField(garbage.toString('base64'), Networks.TESTNET, 'transaction');
    }
  });

  it('refuses a missing, empty or non-string passphrase', () => {
    const xdr = payment().toXDR();
    for (const passphrase of ['', '   ']) throwsField(xdr, passphrase, 'networkPassphrase', /must be the passphrase/);
    for (const passphrase of [undefined, null, 1, [Networks.TESTNET], { passphrase: Networks.TESTNET }]) {
      throwsField(xdr, passphrase, 'networkPassphrase', /must be a string/);
    }
  });

  it('refuses an envelope larger than any the network relays, before decoding it', () => {
    const big = Buffer.alloc(MAX_STELLAR_ENVELOPE_BYTES + 4).toString('base64');
    throwsField(big, Networks.TESTNET, 'transaction', /too large: at most 139264 bytes are accepted/);
  });
});
