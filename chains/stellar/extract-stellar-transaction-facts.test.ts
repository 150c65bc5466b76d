import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Account,
  Asset,
  BASE_FEE,
  Keypair,
  MuxedAccount,
  Networks,
  Operation,
  StrKey,
  TransactionBuilder,
  xdr,
} from '@stellar/stellar-sdk';
import { extractStellarTransactionFacts } from './extract-stellar-transaction-facts.ts';
import { prepareStellarTransaction } from './prepare-stellar-transaction.ts';

const wallet = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 21)).publicKey();
const destination = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 22)).publicKey();
const issuer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 23)).publicKey();
const USDC = new Asset('USDC', issuer);

function envelope(operations: xdr.Operation[], networkPassphrase: string = Networks.PUBLIC, source = wallet): string {
  const builder = new TransactionBuilder(new Account(source, '100'), { fee: BASE_FEE, networkPassphrase });
  for (const operation of operations) builder.addOperation(operation);
  const xdrBase64 = builder.setTimeout(300).build().toXDR();
  prepareStellarTransaction(xdrBase64, networkPassphrase);
  return xdrBase64;
}

const pay = (amount: string, asset = Asset.native(), source?: string, to = destination) =>
  Operation.payment({ destination: to, asset, amount, ...(source ? { source } : {}) });

const unknown = (network: string | null) => ({ network, facts: {}, spend: { moved: [], complete: false } });

describe('extractStellarTransactionFacts', () => {
  it('reads a native payment in stroops on pubnet', () => {
    assert.deepEqual(extractStellarTransactionFacts(envelope([pay('12.5')]), Networks.PUBLIC, wallet), {
      network: 'stellar:pubnet',
      facts: { to: destination, value: '125000000', asset: 'native' },
      spend: { moved: [{ asset: 'native', amount: '125000000' }], complete: true },
    });
  });

  it('reads an issued asset as CODE:ISSUER on testnet, and a muxed destination as its base account', () => {
    const muxed = new MuxedAccount(new Account(destination, '0'), '7').accountId();
    const read = extractStellarTransactionFacts(
      envelope([pay('0.0000001', USDC, undefined, muxed)], Networks.TESTNET),
      Networks.TESTNET,
      wallet,
    );
    assert.deepEqual(read, {
      network: 'stellar:testnet',
      facts: { to: destination, value: '1', asset: `USDC:${issuer}` },
      spend: { moved: [{ asset: `USDC:${issuer}`, amount: '1' }], complete: true },
    });
  });

  it('reads a version 0 envelope (source as a bare key) the same way', () => {
    const v1 = TransactionBuilder.fromXDR(envelope([pay('2')]), Networks.PUBLIC)
      .toEnvelope()
      .v1()
      .tx();
    const v0 = new xdr.TransactionV0({
      sourceAccountEd25519: StrKey.decodeEd25519PublicKey(wallet),
      fee: v1.fee(),
      seqNum: v1.seqNum(),
      timeBounds: null,
      memo: v1.memo(),
      operations: v1.operations(),
      ext: new xdr.TransactionV0Ext(0),
    });
    const legacy = xdr.TransactionEnvelope.envelopeTypeTxV0(new xdr.TransactionV0Envelope({ tx: v0, signatures: [] }));
    const xdrBase64 = legacy.toXDR('base64');
    prepareStellarTransaction(xdrBase64, Networks.PUBLIC);
    assert.deepEqual(extractStellarTransactionFacts(xdrBase64, Networks.PUBLIC, wallet).facts, {
      to: destination,
      value: '20000000',
      asset: 'native',
    });
  });

  it('sums several payments of the wallet (an operation source that is the wallet too) without naming one', () => {
    const read = extractStellarTransactionFacts(
      envelope([pay('1'), pay('2', Asset.native(), wallet), pay('3', USDC)]),
      Networks.PUBLIC,
      wallet,
    );
    assert.deepEqual(read.facts, {});
    assert.deepEqual(read.spend, {
      moved: [
        { asset: 'native', amount: '30000000' },
        { asset: `USDC:${issuer}`, amount: '30000000' },
      ],
      complete: true,
    });
  });

  it('knows nothing with another operation, a payment from another account, or a fee bump', () => {
    const create = Operation.createAccount({ destination, startingBalance: '5' });
    assert.deepEqual(
      extractStellarTransactionFacts(envelope([pay('1'), create]), Networks.PUBLIC, wallet),
      unknown('stellar:pubnet'),
    );
    assert.deepEqual(
      extractStellarTransactionFacts(envelope([pay('1', Asset.native(), issuer)]), Networks.PUBLIC, wallet),
      unknown('stellar:pubnet'),
    );
    assert.deepEqual(
      extractStellarTransactionFacts(envelope([pay('1')], Networks.PUBLIC, issuer), Networks.PUBLIC, wallet),
      unknown('stellar:pubnet'),
    );
    const inner = TransactionBuilder.fromXDR(envelope([pay('1')], Networks.PUBLIC, issuer), Networks.PUBLIC);
    const bump = TransactionBuilder.buildFeeBumpTransaction(wallet, '200', inner as never, Networks.PUBLIC).toXDR();
    assert.deepEqual(extractStellarTransactionFacts(bump, Networks.PUBLIC, wallet), unknown('stellar:pubnet'));
  });

  it('names no network for another passphrase, and reads an envelope that does not decode as nothing', () => {
    const futurenet = 'Test SDF Future Network ; October 2022';
    assert.equal(extractStellarTransactionFacts(envelope([pay('1')], futurenet), futurenet, wallet).network, null);
    assert.deepEqual(extractStellarTransactionFacts('AAAA', Networks.PUBLIC, wallet), unknown('stellar:pubnet'));
  });
});
