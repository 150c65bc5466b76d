import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify as verifyEd25519 } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Secp256k1, Secp256k1Signature, sha256 } from '@cosmjs/crypto';
import { Transaction as SuiTransaction } from '@mysten/sui/transactions';
import { verifyPersonalMessageSignature, verifyTransactionSignature } from '@mysten/sui/verify';
import {
  PublicKey,
  Keypair as SolanaKeypair,
  Transaction as SolanaTransaction,
  SystemProgram,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import {
  Account,
  Asset,
  Networks,
  Operation,
  Keypair as StellarKeypair,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import Database from 'better-sqlite3';
import bs58 from 'bs58';
import {
  keccak256,
  parseTransaction,
  recoverAddress,
  recoverTransactionAddress,
  verifyMessage,
  verifyTypedData,
} from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import type { SignaturePolicy, SignatureRequest } from '../actors/signing/signature-policy.ts';
import { EIP712_MAIL as MAIL } from '../fixtures/eip712-mail.ts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;
let partner: { projectId: string; keyId: string; secret: string };
const wallets: Record<string, { id: string; address: string; publicKey: string }> = {};

const uid = () => `sig-${Math.random().toString(36).slice(2)}`;
const sign = (walletId: string, route: string, body: unknown) =>
  svc.v1(partner.secret, 'POST', `/wallets/${walletId}/${route}`, body);

before(async () => {
  svc = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' });
  partner = await svc.newPartner();
  // transaction.signed is written for keys whose endpoint selects it (nothing listens on port 1: deliveries fail).
  const hook = await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, {
    url: 'https://127.0.0.1:1/hook',
    events: ['transaction.signed'],
  });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  for (const type of ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI']) {
    const r = await svc.v1(partner.secret, 'POST', '/wallets', {
      type,
      userIdentifier: uid(),
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    wallets[type] = r.body;
  }
});
after(async () => {
  await svc.stop();
});

/** A byte of a hex signature flipped (default: inside s, so an EVM signature still recovers, to another key). */
function flipHex(hex: string, at = 40): string {
  const bytes = Buffer.from(hex, 'hex');
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString('hex');
}

function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') },
    format: 'jwk',
  });
  return verifyEd25519(null, message, key, signature);
}

function outboxEvents(type: string): Array<Record<string, unknown>> {
  const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT data FROM outbox WHERE type = ? ORDER BY seq').all(type) as { data: string }[];
    return rows.map((row) => JSON.parse(row.data));
  } finally {
    db.close();
  }
}

const EVM_TX_2 = {
  to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  value: '1000000000000000',
  chainId: 31337,
  type: 2,
  nonce: 7,
  gasLimit: '21000',
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1000000000',
};

describe('sign-message, verified with each chain library', () => {
  test('EVM: EIP-191, viem verifyMessage; a flipped byte fails', async () => {
    const { id, address } = wallets.EVM!;
    const message = 'hello world ☃';
    const r = await sign(id, 'sign-message', { message });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.signature, /^[0-9a-f]{130}$/);
    assert.ok([27, 28].includes(Number.parseInt(r.body.signature.slice(128), 16)));
    assert.equal(
      await verifyMessage({ address: address as `0x${string}`, message, signature: `0x${r.body.signature}` }),
      true,
    );
    assert.equal(
      await verifyMessage({ address: address as `0x${string}`, message, signature: `0x${flipHex(r.body.signature)}` }),
      false,
    );
    assert.equal(
      await verifyMessage({
        address: address as `0x${string}`,
        message: 'hello world',
        signature: `0x${r.body.signature}`,
      }),
      false,
    );
  });

  test('COSMOS: secp256k1 over SHA-256 of the UTF-8 bytes, @cosmjs/crypto verifies; 64-byte r‖s', async () => {
    const { id, publicKey } = wallets.COSMOS!;
    const message = 'cosmos raw bytes';
    const r = await sign(id, 'sign-message', { message });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.signature, /^[0-9a-f]{128}$/);
    const digest = sha256(Buffer.from(message, 'utf8'));
    const pub = Buffer.from(publicKey, 'hex');
    const ok = await Secp256k1.verifySignature(
      Secp256k1Signature.fromFixedLength(Buffer.from(r.body.signature, 'hex')),
      digest,
      pub,
    );
    assert.equal(ok, true);
    const bad = Secp256k1Signature.fromFixedLength(Buffer.from(flipHex(r.body.signature, 40), 'hex'));
    assert.equal(await Secp256k1.verifySignature(bad, digest, pub), false);
  });

  test('SOLANA and STELLAR: Ed25519 over the raw UTF-8 bytes', async () => {
    const message = 'solana or stellar: raw bytes';
    const sol = await sign(wallets.SOLANA!.id, 'sign-message', { message });
    assert.equal(sol.status, 200, JSON.stringify(sol.body));
    assert.match(sol.body.signature, /^[0-9a-f]{128}$/);
    const solKey = new PublicKey(wallets.SOLANA!.address).toBytes();
    assert.equal(ed25519Verify(solKey, Buffer.from(message), Buffer.from(sol.body.signature, 'hex')), true);
    assert.equal(ed25519Verify(solKey, Buffer.from(message), Buffer.from(flipHex(sol.body.signature), 'hex')), false);

    const xlm = await sign(wallets.STELLAR!.id, 'sign-message', { message });
    assert.equal(xlm.status, 200, JSON.stringify(xlm.body));
    const kp = StellarKeypair.fromPublicKey(wallets.STELLAR!.address);
    assert.equal(kp.verify(Buffer.from(message), Buffer.from(xlm.body.signature, 'hex')), true);
    assert.equal(kp.verify(Buffer.from(message), Buffer.from(flipHex(xlm.body.signature), 'hex')), false);
  });

  test('SUI: PersonalMessage intent, verifyPersonalMessageSignature with the address', async () => {
    const { id, address } = wallets.SUI!;
    const message = 'sui personal message';
    const r = await sign(id, 'sign-message', { message });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const pk = await verifyPersonalMessageSignature(Buffer.from(message), r.body.signature, { address });
    assert.equal(pk.toSuiAddress(), address);
    const raw = Buffer.from(r.body.signature, 'base64');
    raw[5] = raw[5]! ^ 1;
    await assert.rejects(verifyPersonalMessageSignature(Buffer.from(message), raw.toString('base64'), { address }));
  });

  test('bad messages are 400s naming the field', async () => {
    for (const body of [
      {},
      { message: '' },
      { message: 42 },
      { message: 'x'.repeat(65_537) },
      { message: 'a', extra: 1 },
    ]) {
      const r = await sign(wallets.EVM!.id, 'sign-message', body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.code, 'INVALID_REQUEST');
    }
    // 30,000 snowmen are 90,000 UTF-8 bytes: over the limit though under 65,536 characters.
    const r = await sign(wallets.SOLANA!.id, 'sign-message', { message: '☃'.repeat(30_000) });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /bytes/);
    const lone = await sign(wallets.SOLANA!.id, 'sign-message', { message: 'a\ud800b' });
    assert.equal(lone.status, 400);
  });
});

describe('sign-raw: exactly the given bytes', () => {
  test('EVM: a 32-byte digest, recovered with viem recoverAddress', async () => {
    const hash = keccak256(randomBytes(40));
    const r = await sign(wallets.EVM!.id, 'sign-raw', { data: hash, walletType: 'EVM' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(await recoverAddress({ hash, signature: `0x${r.body.signature}` }), wallets.EVM!.address);
    const noPrefix = await sign(wallets.EVM!.id, 'sign-raw', { data: hash.slice(2) });
    assert.equal(noPrefix.body.signature, r.body.signature, 'deterministic (RFC 6979), with or without 0x');
  });

  test('COSMOS: the route for Cosmos transactions, SHA-256 of the sign bytes', async () => {
    const signBytes = randomBytes(150);
    const digest = sha256(signBytes);
    const r = await sign(wallets.COSMOS!.id, 'sign-raw', {
      data: Buffer.from(digest).toString('hex'),
      walletType: 'COSMOS',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const ok = await Secp256k1.verifySignature(
      Secp256k1Signature.fromFixedLength(Buffer.from(r.body.signature, 'hex')),
      digest,
      Buffer.from(wallets.COSMOS!.publicKey, 'hex'),
    );
    assert.equal(ok, true);
    const whole = await sign(wallets.COSMOS!.id, 'sign-raw', { data: signBytes.toString('hex'), walletType: 'COSMOS' });
    assert.equal(whole.status, 400);
    assert.match(whole.body.message, /32-byte digest/);
  });

  test('Ed25519 wallets sign the bytes themselves', async () => {
    const data = randomBytes(300);
    for (const type of ['SOLANA', 'STELLAR', 'SUI']) {
      const r = await sign(wallets[type]!.id, 'sign-raw', { data: `0x${data.toString('hex')}` });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const ok = ed25519Verify(
        Buffer.from(wallets[type]!.publicKey, 'hex'),
        data,
        Buffer.from(r.body.signature, 'hex'),
      );
      assert.equal(ok, true, type);
    }
  });

  test('odd, non-hex, empty and mismatched walletType are 400s', async () => {
    const cases: Array<[unknown, string]> = [
      [{ data: 'abc' }, 'INVALID_REQUEST'],
      [{ data: 'zz' }, 'INVALID_REQUEST'],
      [{ data: '0x' }, 'INVALID_REQUEST'],
      [{ data: '' }, 'INVALID_REQUEST'],
      [{ data: 'ab'.repeat(32), walletType: 'SOLANA' }, 'INVALID_REQUEST'],
      [{ data: 'ab'.repeat(32), walletType: 'TRON' }, 'INVALID_REQUEST'],
      [{ data: 'ab'.repeat(31) }, 'INVALID_REQUEST'],
      [{ data: 'ab'.repeat(33) }, 'INVALID_REQUEST'],
    ];
    for (const [body, code] of cases) {
      const r = await sign(wallets.EVM!.id, 'sign-raw', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, code);
      assert.match(r.body.message, /data|walletType/);
    }
  });
});

describe('transaction.signed', () => {
  test('every REST signature writes one for a key whose endpoint selects it; none for a key without', async () => {
    const { id } = wallets.EVM!;
    const before = outboxEvents('transaction.signed').length;
    assert.equal((await sign(id, 'sign-message', { message: 'event?' })).status, 200);
    assert.equal((await sign(id, 'sign-raw', { data: `0x${'ab'.repeat(32)}` })).status, 200);
    assert.equal((await sign(id, 'sign-typed-data', { typedData: MAIL })).status, 200);
    const events = outboxEvents('transaction.signed').slice(before);
    assert.deepEqual(
      events.map((e) => e.chainId),
      [null, null, String(MAIL.domain.chainId)],
    );
    assert.ok(events.every((e) => e.walletId === id));

    const other = await svc.newPartner();
    const w = await svc.v1(other.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: uid(),
      userIdentifierType: 'CUSTOM_ID',
    });
    const count = outboxEvents('transaction.signed').length;
    const r = await svc.v1(other.secret, 'POST', `/wallets/${w.body.id}/sign-message`, { message: 'unheard' });
    assert.equal(r.status, 200);
    assert.equal(outboxEvents('transaction.signed').length, count, 'no endpoint selects it: nothing is written');
  });
});

describe('sign-transaction', () => {
  test('EVM type 2 and type 0: recoverTransactionAddress, every field preserved', async () => {
    const { id, address } = wallets.EVM!;
    const before = outboxEvents('transaction.signed').length;
    const t2 = await sign(id, 'sign-transaction', { transaction: { ...EVM_TX_2, data: '0xdeadbeef' } });
    assert.equal(t2.status, 200, JSON.stringify(t2.body));
    assert.match(t2.body.signedTransaction, /^0x02/);
    assert.equal(await recoverTransactionAddress({ serializedTransaction: t2.body.signedTransaction }), address);
    const parsed = parseTransaction(t2.body.signedTransaction);
    assert.equal(parsed.chainId, 31337);
    assert.equal(parsed.nonce, 7);
    assert.equal(parsed.value, 1000000000000000n);
    assert.equal(parsed.gas, 21000n);
    assert.equal(parsed.maxFeePerGas, 30000000000n);
    assert.equal(parsed.maxPriorityFeePerGas, 1000000000n);
    assert.equal(parsed.data, '0xdeadbeef');
    assert.equal(parsed.to?.toLowerCase(), EVM_TX_2.to.toLowerCase());

    const t0 = await sign(id, 'sign-transaction', {
      transaction: { to: EVM_TX_2.to, value: '5', chainId: 1, type: 0, nonce: 0, gasLimit: '21000', gasPrice: '7' },
    });
    assert.equal(t0.status, 200, JSON.stringify(t0.body));
    assert.equal(await recoverTransactionAddress({ serializedTransaction: t0.body.signedTransaction }), address);
    const legacy = parseTransaction(t0.body.signedTransaction);
    assert.equal(legacy.type, 'legacy');
    assert.equal(legacy.gasPrice, 7n);
    assert.equal(legacy.chainId, 1, 'EIP-155 replay protection');

    const events = outboxEvents('transaction.signed');
    assert.equal(events.length, before + 2, 'one transaction.signed per transaction signature');
    const last = events.at(-1)!;
    assert.equal(last.walletId, id);
    assert.equal(last.walletAddress, address);
    assert.equal(last.chainId, '1');
    assert.ok(!Number.isNaN(Date.parse(String(last.signedAt))));
  });

  test('EVM: inconsistent or unknown fields are 400s naming the field; broadcast is refused', async () => {
    const { id } = wallets.EVM!;
    const cases: Array<Record<string, unknown>> = [
      { ...EVM_TX_2, type: 1 },
      { ...EVM_TX_2, gasPrice: '1' },
      { ...EVM_TX_2, maxFeePerGas: undefined },
      { ...EVM_TX_2, value: '-1' },
      { ...EVM_TX_2, value: '1.5' },
      { ...EVM_TX_2, value: 1 },
      { ...EVM_TX_2, to: '0x1234' },
      { ...EVM_TX_2, data: '0xabc' },
      { ...EVM_TX_2, chainId: 0 },
      { ...EVM_TX_2, from: EVM_TX_2.to },
      { ...EVM_TX_2, nonce: -1 },
    ];
    for (const transaction of cases) {
      const r = await sign(id, 'sign-transaction', { transaction });
      assert.equal(r.status, 400, JSON.stringify(transaction));
      assert.equal(r.body.code, 'INVALID_REQUEST');
      assert.match(String(r.body.field ?? ''), /^body\.transaction/, JSON.stringify(r.body));
    }
    const str = await sign(id, 'sign-transaction', { transaction: 'AAAA' });
    assert.equal(str.status, 400);
    // Broadcasting needs the chain in CHAINS_FILE (this service has none): a clear 400, nothing recorded.
    const b = await sign(id, 'sign-transaction', { transaction: EVM_TX_2, broadcast: true });
    assert.equal(b.status, 400);
    assert.equal(b.body.code, 'CHAIN_NOT_CONFIGURED');
    assert.equal(b.headers.get('x-transaction-id'), null);
  });

  test('SOLANA legacy and v0: web3.js verifies; the wallet must be a required signer', async () => {
    const { id, address } = wallets.SOLANA!;
    const payer = new PublicKey(address);
    const recentBlockhash = SolanaKeypair.generate().publicKey.toBase58();
    const ix = SystemProgram.transfer({
      fromPubkey: payer,
      toPubkey: SolanaKeypair.generate().publicKey,
      lamports: 1000,
    });

    const legacy = new SolanaTransaction({ feePayer: payer, recentBlockhash }).add(ix);
    const legacyB64 = legacy.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64');
    const r1 = await sign(id, 'sign-transaction', { transaction: legacyB64, network: 'SOLANA_DEVNET' });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    const signedLegacy = SolanaTransaction.from(Buffer.from(r1.body.signedTransaction, 'base64'));
    assert.equal(signedLegacy.verifySignatures(), true);

    // v0 with a second signer before the wallet: the wallet's slot is filled, the other stays empty.
    const other = SolanaKeypair.generate();
    const message = new TransactionMessage({
      payerKey: other.publicKey,
      recentBlockhash,
      instructions: [ix],
    }).compileToV0Message();
    const v0 = new VersionedTransaction(message);
    const r2 = await sign(id, 'sign-transaction', { transaction: Buffer.from(v0.serialize()).toString('base64') });
    assert.equal(r2.status, 200, JSON.stringify(r2.body));
    const signedV0 = VersionedTransaction.deserialize(Buffer.from(r2.body.signedTransaction, 'base64'));
    assert.equal(signedV0.version, 0);
    const index = signedV0.message.staticAccountKeys.findIndex((k) => k.equals(payer));
    assert.equal(index, 1);
    assert.equal(ed25519Verify(payer.toBytes(), signedV0.message.serialize(), signedV0.signatures[index]!), true);
    assert.ok(
      signedV0.signatures[0]!.every((b) => b === 0),
      "the other signer's slot is untouched",
    );

    const stranger = new SolanaTransaction({ feePayer: other.publicKey, recentBlockhash }).add(
      SystemProgram.transfer({ fromPubkey: other.publicKey, toPubkey: payer, lamports: 1 }),
    );
    const r3 = await sign(id, 'sign-transaction', {
      transaction: stranger.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64'),
    });
    assert.equal(r3.status, 400);
    assert.match(r3.body.message, /signer/);
    for (const transaction of ['not base64!', 'AAAA', Buffer.from(randomBytes(64)).toString('base64')]) {
      const bad = await sign(id, 'sign-transaction', { transaction });
      assert.equal(bad.status, 400, transaction);
    }
    const b = await sign(id, 'sign-transaction', { transaction: legacyB64, broadcast: true });
    assert.equal(b.body.code, 'CHAIN_NOT_CONFIGURED');
  });

  test('STELLAR: signed for exactly the given passphrase; broadcast rejected', async () => {
    const { id, address } = wallets.STELLAR!;
    const tx = new TransactionBuilder(new Account(address, '41'), { fee: '100', networkPassphrase: Networks.TESTNET })
      .addOperation(
        Operation.payment({ destination: StellarKeypair.random().publicKey(), asset: Asset.native(), amount: '1' }),
      )
      .setTimeout(30)
      .build();
    const r = await sign(id, 'sign-transaction', { transaction: tx.toXDR(), networkPassphrase: Networks.TESTNET });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const signed = TransactionBuilder.fromXDR(r.body.signedTransaction, Networks.TESTNET);
    assert.equal(signed.signatures.length, 1);
    const kp = StellarKeypair.fromPublicKey(address);
    assert.equal(kp.verify(signed.hash(), signed.signatures[0]!.signature()), true);
    const onPublic = TransactionBuilder.fromXDR(r.body.signedTransaction, Networks.PUBLIC);
    assert.equal(kp.verify(onPublic.hash(), signed.signatures[0]!.signature()), false, 'bound to the passphrase');

    const missing = await sign(id, 'sign-transaction', { transaction: tx.toXDR() });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /networkPassphrase/);
    const garbage = await sign(id, 'sign-transaction', {
      transaction: 'AAAAAgAAAAA=',
      networkPassphrase: Networks.TESTNET,
    });
    assert.equal(garbage.status, 400);
    const b = await sign(id, 'sign-transaction', {
      transaction: tx.toXDR(),
      networkPassphrase: Networks.TESTNET,
      broadcast: true,
    });
    assert.equal(b.status, 400);
    assert.equal(b.body.code, 'BROADCAST_NOT_SUPPORTED');
  });

  test('SUI: {signature, transaction}, verifyTransactionSignature', async () => {
    const { id, address } = wallets.SUI!;
    const tx = new SuiTransaction();
    tx.setSender(address);
    tx.setGasPrice(1000);
    tx.setGasBudget(10_000_000);
    tx.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '1', digest: bs58.encode(randomBytes(32)) }]);
    const [coin] = tx.splitCoins(tx.gas, [1000]);
    tx.transferObjects([coin!], `0x${'22'.repeat(32)}`);
    const bytes = await tx.build();
    const b64 = Buffer.from(bytes).toString('base64');
    const r = await sign(id, 'sign-transaction', { transaction: b64 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.transaction, b64);
    const pk = await verifyTransactionSignature(bytes, r.body.signature, { address });
    assert.equal(pk.toSuiAddress(), address);
    const bad = await sign(id, 'sign-transaction', { transaction: Buffer.from(randomBytes(50)).toString('base64') });
    assert.equal(bad.status, 400);
  });

  test('COSMOS is refused with a pointer to sign-raw', async () => {
    const r = await sign(wallets.COSMOS!.id, 'sign-transaction', { transaction: 'AAAA' });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'UNSUPPORTED_OPERATION');
    assert.match(r.body.message, /sign-raw/);
  });
});

describe('sign-typed-data and sign-authorization (EVM only)', () => {
  test('EIP-712: viem verifyTypedData; EIP712Domain in types is a 400', async () => {
    const { id, address } = wallets.EVM!;
    const r = await sign(id, 'sign-typed-data', { typedData: MAIL });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(
      await verifyTypedData({ address: address as `0x${string}`, ...MAIL, signature: `0x${r.body.signature}` }),
      true,
    );
    assert.equal(
      await verifyTypedData({
        address: address as `0x${string}`,
        ...MAIL,
        signature: `0x${flipHex(r.body.signature)}`,
      }),
      false,
    );
    const withDomain = {
      ...MAIL,
      types: { ...MAIL.types, EIP712Domain: [{ name: 'name', type: 'string' }] },
    };
    const bad = await sign(id, 'sign-typed-data', { typedData: withDomain });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /EIP712Domain/);
    for (const typedData of [
      { ...MAIL, primaryType: 'Nope' },
      { ...MAIL, message: { ...MAIL.message, from: { name: 'Cow', wallet: 'not an address' } } },
      { ...MAIL, types: { Mail: [{ name: 'x', type: 'uint257' }] } },
    ]) {
      const rr = await sign(id, 'sign-typed-data', { typedData });
      assert.equal(rr.status, 400, JSON.stringify(typedData).slice(0, 100));
    }
  });

  test('EIP-7702: recoverAuthorizationAddress; contractAddress is an alias', async () => {
    const { id, address } = wallets.EVM!;
    const target = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    for (const authorization of [
      { address: target, chainId: 31337, nonce: 3 },
      { contractAddress: target.toLowerCase(), chainId: 0, nonce: 0 },
    ]) {
      const r = await sign(id, 'sign-authorization', { authorization });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.address, target);
      assert.equal(r.body.chainId, authorization.chainId);
      assert.equal(r.body.nonce, authorization.nonce);
      assert.ok(r.body.yParity === 0 || r.body.yParity === 1);
      assert.match(r.body.signature, /^[0-9a-f]{130}$/);
      const recovered = await recoverAuthorizationAddress({
        authorization: { address: r.body.address, chainId: r.body.chainId, nonce: r.body.nonce },
        signature: { r: r.body.r, s: r.body.s, yParity: r.body.yParity },
      });
      assert.equal(recovered, address);
      const fromHex = await recoverAuthorizationAddress({
        authorization: { address: r.body.address, chainId: r.body.chainId, nonce: r.body.nonce },
        signature: `0x${r.body.signature}`,
      });
      assert.equal(fromHex, address);
    }
    for (const authorization of [
      { chainId: 1, nonce: 0 },
      { address: '0x1234', chainId: 1, nonce: 0 },
      { address: target, chainId: -1, nonce: 0 },
      { address: target, chainId: 1, nonce: 1.5 },
      { address: target, contractAddress: `0x${'12'.repeat(20)}`, chainId: 1, nonce: 0 },
    ]) {
      const r = await sign(id, 'sign-authorization', { authorization });
      assert.equal(r.status, 400, JSON.stringify(authorization));
    }
  });

  test('outside the support matrix: a clear 400, never a guess', async () => {
    for (const type of ['COSMOS', 'SOLANA', 'STELLAR', 'SUI']) {
      const td = await sign(wallets[type]!.id, 'sign-typed-data', { typedData: MAIL });
      assert.equal(td.status, 400);
      assert.equal(td.body.code, 'UNSUPPORTED_OPERATION');
      const au = await sign(wallets[type]!.id, 'sign-authorization', {
        authorization: { address: EVM_TX_2.to, chainId: 1, nonce: 0 },
      });
      assert.equal(au.status, 400);
      assert.equal(au.body.code, 'UNSUPPORTED_OPERATION');
    }
  });
});

describe("large inputs (their chain steps run on the API's worker pool)", () => {
  test('EVM transaction with 40 KB of data, 64 KiB typed data, a 4 KB Sui transaction: all verify', async () => {
    const evm = wallets.EVM!;
    const data = `0x${'ab'.repeat(40_000)}` as const;
    const t = await sign(evm.id, 'sign-transaction', { transaction: { ...EVM_TX_2, data } });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal(await recoverTransactionAddress({ serializedTransaction: t.body.signedTransaction }), evm.address);
    assert.equal(parseTransaction(t.body.signedTransaction).data, data);

    const mail = { ...MAIL, message: { ...MAIL.message, contents: 'x'.repeat(64 * 1024) } };
    const m = await sign(evm.id, 'sign-typed-data', { typedData: mail });
    assert.equal(m.status, 200, JSON.stringify(m.body));
    assert.equal(
      await verifyTypedData({ address: evm.address as `0x${string}`, ...mail, signature: `0x${m.body.signature}` }),
      true,
    );

    const sui = wallets.SUI!;
    const tx = new SuiTransaction();
    tx.setSender(sui.address);
    tx.setGasPrice(1000);
    tx.setGasBudget(10_000_000);
    tx.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '1', digest: bs58.encode(randomBytes(32)) }]);
    tx.splitCoins(
      tx.gas,
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
    const bytes = await tx.build();
    assert.ok(bytes.length > 2048);
    const r = await sign(sui.id, 'sign-transaction', { transaction: Buffer.from(bytes).toString('base64') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(
      (await verifyTransactionSignature(bytes, r.body.signature, { address: sui.address })).toSuiAddress(),
      sui.address,
    );

    // What an operator sees: small bodies were worked on inline, these large ones on the pool, none is waiting.
    const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    for (const step of [
      'hashEvmTypedData',
      'prepareEvmTransaction',
      'serializeSignedEvmTransaction',
      'prepareSuiTransaction',
    ]) {
      assert.match(metrics, new RegExp(`chain_steps_total\\{step="${step}",where="worker"\\} [1-9]`), step);
    }
    assert.match(metrics, /chain_steps_total\{step="hashEvmTypedData",where="inline"\} [1-9]/);
    assert.match(metrics, /chain_pool_queue_size 0/);
  });

  test('a large body with a bad value deep inside is a 400 naming its field', async () => {
    const evm = wallets.EVM!;
    const mail = {
      ...MAIL,
      message: { ...MAIL.message, contents: 'x'.repeat(16 * 1024), to: { name: 'Bob', wallet: 'nope' } },
    };
    const r = await sign(evm.id, 'sign-typed-data', { typedData: mail });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.code, 'INVALID_REQUEST');
    assert.equal(r.body.field, 'body.typedData.message.to.wallet');
    const t = await sign(evm.id, 'sign-transaction', {
      transaction: { ...EVM_TX_2, data: `0x${'ab'.repeat(8_000)}`, gasLimit: 'lots' },
    });
    assert.equal(t.status, 400, JSON.stringify(t.body));
    assert.equal(t.body.field, 'body.transaction.gasLimit');
  });
});

describe('wallets that cannot sign', () => {
  test('a missing or foreign wallet is the same 404', async () => {
    const other = await svc.newPartner();
    const foreign = await svc.v1(other.secret, 'POST', `/wallets/${wallets.EVM!.id}/sign-message`, { message: 'x' });
    const missing = await sign('00000000-0000-4000-8000-000000000000', 'sign-message', { message: 'x' });
    assert.equal(foreign.status, 404);
    assert.equal(missing.status, 404);
    assert.equal(foreign.body.code, missing.body.code);
    assert.equal(foreign.body.message, missing.body.message);
  });
});

describe('the policy decision point', () => {
  test('every signing route asks it first; a denial signs nothing; raw signatures are marked', async () => {
    const seen: SignatureRequest[] = [];
    let effect: 'deny' | 'review' = 'deny';
    const policy: SignaturePolicy = {
      decide(request) {
        seen.push(request);
        return effect === 'deny'
          ? { effect: 'deny', reason: 'raw-signature-not-allowed', policyId: 'pol_1', ruleId: 'rule_1' }
          : { effect: 'review', details: { reviewId: 'rev_1' } };
      },
    };
    const guarded = await startTestService({}, { api: { signaturePolicy: policy } });
    try {
      const p = await guarded.newPartner();
      const made: Record<string, string> = {};
      for (const type of ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI']) {
        const r = await guarded.v1(p.secret, 'POST', '/wallets', {
          type,
          userIdentifier: uid(),
          userIdentifierType: 'EMAIL',
        });
        made[type] = r.body.id;
      }
      const call = (type: string, route: string, body: unknown) =>
        guarded.v1(p.secret, 'POST', `/wallets/${made[type]}/${route}`, body);
      const expectations: Array<[string, string, unknown, boolean]> = [
        ['EVM', 'sign-message', { message: 'm' }, false],
        ['COSMOS', 'sign-message', { message: 'm' }, true],
        ['SOLANA', 'sign-message', { message: 'm' }, true],
        ['STELLAR', 'sign-message', { message: 'm' }, true],
        ['SUI', 'sign-message', { message: 'm' }, true],
        ['EVM', 'sign-raw', { data: 'ab'.repeat(32) }, true],
        ['SOLANA', 'sign-raw', { data: 'abcd' }, true],
        ['EVM', 'sign-transaction', { transaction: EVM_TX_2 }, false],
        ['EVM', 'sign-typed-data', { typedData: MAIL }, false],
        ['EVM', 'sign-authorization', { authorization: { address: EVM_TX_2.to, chainId: 1, nonce: 0 } }, false],
      ];
      for (const [type, route, body, raw] of expectations) {
        const before = seen.length;
        const r = await call(type, route, body);
        assert.equal(r.status, 403, `${type} ${route}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.code, 'POLICY_DENIED');
        assert.equal(r.body.deniedBy[0].reason, 'raw-signature-not-allowed');
        assert.equal(r.body.policyId, 'pol_1');
        assert.equal(r.body.signature, undefined);
        assert.equal(seen.length, before + 1);
        assert.equal(seen.at(-1)!.operation, route);
        assert.equal(seen.at(-1)!.rawSignature, raw, `${type} ${route} raw`);
        assert.equal(seen.at(-1)!.wallet.id, made[type]);
      }
      assert.equal(seen.find((s) => s.operation === 'sign-transaction')!.chainId, '31337');
      effect = 'review';
      const review = await call('EVM', 'sign-message', { message: 'm' });
      assert.equal(review.status, 403);
      assert.equal(review.body.code, 'POLICY_REVIEW_REQUIRED');
      assert.equal(review.body.reviewId, 'rev_1');
    } finally {
      await guarded.stop();
    }
  });
});
