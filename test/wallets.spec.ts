import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeSecp256k1Pubkey, pubkeyToAddress } from '@cosmjs/amino';
import { Ed25519PublicKey } from '@mysten/sui/keypairs/ed25519';
import { PublicKey } from '@solana/web3.js';
import { StrKey } from '@stellar/stellar-sdk';
import { getAddress } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;
let partner: { projectId: string; keyId: string; secret: string };

before(async () => {
  svc = await startTestService();
  partner = await svc.newPartner();
});
after(async () => {
  await svc.stop();
});

const create = (body: Record<string, unknown>, secret = partner.secret) => svc.v1(secret, 'POST', '/wallets', body);
const uid = (p = 'u') => `${p}-${Math.random().toString(36).slice(2)}`;

describe('POST /v1/wallets', () => {
  test('EVM: checksummed address from keccak of the public key, as viem derives it', async () => {
    const r = await create({ type: 'EVM', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID' });
    assert.equal(r.status, 201);
    assert.equal(r.body.type, 'EVM');
    assert.equal(r.body.scheme, 'DKLS');
    assert.equal(r.body.status, 'ready');
    assert.match(r.body.publicKey, /^04[0-9a-f]{128}$/);
    assert.equal(r.body.address, publicKeyToAddress(`0x${r.body.publicKey}`));
    assert.equal(r.body.address, getAddress(r.body.address));
    assert.match(r.body.id, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(r.body.createdAt)));
  });

  test('COSMOS: Bech32 with the default and a custom prefix, as @cosmjs derives it', async () => {
    for (const prefix of [undefined, 'osmo']) {
      const r = await create({
        type: 'COSMOS',
        userIdentifier: uid(),
        userIdentifierType: 'EMAIL',
        ...(prefix ? { cosmosPrefix: prefix } : {}),
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.scheme, 'DKLS');
      assert.match(r.body.publicKey, /^0[23][0-9a-f]{64}$/);
      const expected = pubkeyToAddress(encodeSecp256k1Pubkey(Buffer.from(r.body.publicKey, 'hex')), prefix ?? 'cosmos');
      assert.equal(r.body.address, expected);
    }
  });

  test('SOLANA: Base58 of the ed25519 public key, on the curve for @solana/web3.js', async () => {
    const r = await create({ type: 'SOLANA', userIdentifier: uid(), userIdentifierType: 'PHONE' });
    assert.equal(r.status, 201);
    assert.equal(r.body.scheme, 'ED25519');
    const pk = new PublicKey(r.body.address);
    assert.equal(Buffer.from(pk.toBytes()).toString('hex'), r.body.publicKey);
    assert.ok(PublicKey.isOnCurve(pk.toBytes()));
  });

  test('STELLAR: StrKey G… as stellar-sdk encodes it', async () => {
    const r = await create({ type: 'STELLAR', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID' });
    assert.equal(r.status, 201);
    assert.equal(r.body.scheme, 'ED25519');
    assert.match(r.body.address, /^G[A-Z2-7]{55}$/);
    assert.ok(StrKey.isValidEd25519PublicKey(r.body.address));
    assert.equal(r.body.address, StrKey.encodeEd25519PublicKey(Buffer.from(r.body.publicKey, 'hex')));
  });

  test('SUI: 0x BLAKE2b address of the ed25519 key, as @mysten/sui derives it', async () => {
    const r = await create({ type: 'SUI', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID' });
    assert.equal(r.status, 201);
    assert.equal(r.body.scheme, 'ED25519');
    assert.equal(r.body.address, new Ed25519PublicKey(Buffer.from(r.body.publicKey, 'hex')).toSuiAddress());
  });

  test('a scheme the type cannot use, or cosmosPrefix on a non-COSMOS wallet, is a 400 naming the field', async () => {
    const a = await create({ type: 'EVM', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID', scheme: 'ED25519' });
    assert.equal(a.status, 400);
    assert.equal(a.body.code, 'INVALID_REQUEST');
    assert.equal(a.body.field, 'body.scheme');
    const b = await create({ type: 'SUI', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID', cosmosPrefix: 'x' });
    assert.equal(b.status, 400);
    assert.equal(b.body.field, 'body.cosmosPrefix');
    const c = await create({
      type: 'COSMOS',
      userIdentifier: uid(),
      userIdentifierType: 'CUSTOM_ID',
      cosmosPrefix: 'Bad!',
    });
    assert.equal(c.status, 400);
    assert.equal(c.body.field, 'body.cosmosPrefix');
  });

  test('a duplicate answers 409 WALLET_ALREADY_EXISTS with the existing walletId; scheme and type make it distinct', async () => {
    const who = uid('dup');
    const first = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' });
    assert.equal(first.status, 201);
    const again = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID', scheme: 'DKLS' });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'WALLET_ALREADY_EXISTS');
    assert.equal(again.body.walletId, first.body.id);
    const otherType = await create({ type: 'COSMOS', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' });
    assert.equal(otherType.status, 201);
    const otherIdType = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'EMAIL' });
    assert.equal(otherIdType.status, 201);
  });

  test('concurrent duplicate creates: exactly one wallet, every other answer is 409 naming it', async () => {
    const who = uid('race');
    const answers = await Promise.all(
      Array.from({ length: 24 }, () =>
        create({ type: 'SOLANA', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' }),
      ),
    );
    const created = answers.filter((a) => a.status === 201);
    const conflicts = answers.filter((a) => a.status === 409);
    assert.equal(created.length, 1);
    assert.equal(conflicts.length, 23);
    for (const c of conflicts) assert.equal(c.body.walletId, created[0]!.body.id);
    const list = await svc.v1(partner.secret, 'GET', `/wallets?userIdentifier=${who}`);
    assert.equal(list.body.data.length, 1);
  });

  test('the same identity in another project is another wallet', async () => {
    const other = await svc.newPartner();
    const who = uid('shared');
    const a = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' });
    const b = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' }, other.secret);
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
    assert.notEqual(a.body.address, b.body.address);
  });
});

describe('GET /v1/wallets and /v1/wallets/{id}', () => {
  let owner: { projectId: string; keyId: string; secret: string };
  const ids: string[] = [];
  before(async () => {
    owner = await svc.newPartner();
    const types = ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI', 'EVM', 'SOLANA'];
    for (const [i, type] of types.entries()) {
      const r = await create(
        { type, userIdentifier: `list-${i}`, userIdentifierType: i % 2 ? 'EMAIL' : 'CUSTOM_ID' },
        owner.secret,
      );
      assert.equal(r.status, 201);
      ids.push(r.body.id);
    }
  });

  test('get returns the wallet as created', async () => {
    const r = await svc.v1(owner.secret, 'GET', `/wallets/${ids[0]}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.id, ids[0]);
    assert.equal(r.body.status, 'ready');
    assert.equal(r.body.userIdentifier, 'list-0');
    assert.equal(r.body.userIdentifierType, 'CUSTOM_ID');
    assert.match(r.body.address, /^0x[0-9a-fA-F]{40}$/);
  });

  test('list pages newest first through opaque cursors, with the spec envelope', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : '?limit=3';
      const r = await svc.v1(owner.secret, 'GET', `/wallets${q}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.pagination.limit, 3);
      assert.ok(r.body.data.length <= 3);
      for (const w of r.body.data) {
        assert.deepEqual(Object.keys(w).sort(), ['address', 'createdAt', 'id', 'scheme', 'status', 'type']);
        seen.push(w.id);
      }
      cursor = r.body.pagination.cursor;
      assert.equal(r.body.pagination.hasMore, cursor !== null);
      pages += 1;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('list filters by type, status, identifier, identifier type and address', async () => {
    const evm = await svc.v1(owner.secret, 'GET', '/wallets?type=EVM');
    assert.deepEqual(
      evm.body.data.map((w: { id: string }) => w.id),
      [ids[5], ids[0]],
    );
    const ready = await svc.v1(owner.secret, 'GET', '/wallets?status=ready&limit=100');
    assert.equal(ready.body.data.length, ids.length);
    const creating = await svc.v1(owner.secret, 'GET', '/wallets?status=creating');
    assert.equal(creating.body.data.length, 0);
    const byUser = await svc.v1(owner.secret, 'GET', '/wallets?userIdentifier=list-2&userIdentifierType=CUSTOM_ID');
    assert.deepEqual(
      byUser.body.data.map((w: { id: string }) => w.id),
      [ids[2]],
    );
    const one = await svc.v1(owner.secret, 'GET', `/wallets/${ids[3]}`);
    const byAddr = await svc.v1(owner.secret, 'GET', `/wallets?address=${one.body.address}`);
    assert.deepEqual(
      byAddr.body.data.map((w: { id: string }) => w.id),
      [ids[3]],
    );
  });

  test('a cursor that the service did not issue, and a limit out of range, are 400s', async () => {
    const bad = await svc.v1(owner.secret, 'GET', '/wallets?cursor=not-a-cursor');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'INVALID_CURSOR');
    for (const limit of ['0', '101', 'abc', '-1']) {
      const r = await svc.v1(owner.secret, 'GET', `/wallets?limit=${limit}`);
      assert.equal(r.status, 400, limit);
      assert.equal(r.body.code, 'INVALID_REQUEST');
    }
  });

  test("another project's wallet is a 404 whose body is identical to a missing one", async () => {
    const stranger = await svc.newPartner();
    const theirs = await svc.v1(stranger.secret, 'GET', `/wallets/${ids[0]}`, undefined, { 'x-request-id': 'same-id' });
    const missing = await svc.v1(stranger.secret, 'GET', '/wallets/00000000-0000-4000-8000-000000000000', undefined, {
      'x-request-id': 'same-id',
    });
    assert.equal(theirs.status, 404);
    assert.equal(missing.status, 404);
    assert.deepEqual(theirs.body, missing.body);
    const patch = await svc.v1(
      stranger.secret,
      'PATCH',
      `/wallets/${ids[0]}`,
      { userIdentifier: 'x' },
      { 'x-request-id': 'same-id' },
    );
    assert.equal(patch.status, 404);
    assert.deepEqual(patch.body, missing.body);
    const list = await svc.v1(stranger.secret, 'GET', '/wallets');
    assert.deepEqual(list.body.data, []);
  });
});

describe('PATCH /v1/wallets/{id}', () => {
  test('switches the identifier; the new identity then counts for uniqueness', async () => {
    const who = uid('patch');
    const w = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' });
    const r = await svc.v1(partner.secret, 'PATCH', `/wallets/${w.body.id}`, {
      userIdentifier: `${who}@example.com`,
      userIdentifierType: 'EMAIL',
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.userIdentifier, `${who}@example.com`);
    assert.equal(r.body.userIdentifierType, 'EMAIL');
    assert.equal(r.body.address, w.body.address);
    const dup = await create({ type: 'EVM', userIdentifier: `${who}@example.com`, userIdentifierType: 'EMAIL' });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.walletId, w.body.id);
    const fresh = await create({ type: 'EVM', userIdentifier: who, userIdentifierType: 'CUSTOM_ID' });
    assert.equal(fresh.status, 201);
    // Moving the first wallet back onto the identity the fresh one now holds is a conflict naming it.
    const clash = await svc.v1(partner.secret, 'PATCH', `/wallets/${w.body.id}`, {
      userIdentifier: who,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(clash.status, 409);
    assert.equal(clash.body.code, 'WALLET_ALREADY_EXISTS');
    assert.equal(clash.body.walletId, fresh.body.id);
  });

  test('an empty or unknown-field body is a 400', async () => {
    const w = await create({ type: 'SUI', userIdentifier: uid(), userIdentifierType: 'CUSTOM_ID' });
    const empty = await svc.v1(partner.secret, 'PATCH', `/wallets/${w.body.id}`, {});
    assert.equal(empty.status, 400);
    const unknown = await svc.v1(partner.secret, 'PATCH', `/wallets/${w.body.id}`, { type: 'EVM' });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.field, 'body.type');
  });
});
