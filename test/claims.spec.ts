import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { snapshotChanges, snapshotDb } from './helpers/bad-input-db.ts';
import { type RawResponse, rawRequest } from './helpers/bad-input-http.ts';
import { EVM_TRANSACTION, MAIL_TYPED_DATA } from './helpers/bad-input-matrix.ts';
import {
  type EnclaveKey,
  encryptForEnclave,
  migrationPayload,
  randomSigner,
  shareEntry,
  sharePlaintext,
} from './helpers/migration-client.ts';
import { type Partner, startTestService, type TestService, type WalletBody } from './helpers/service.ts';

// Claims (spec: "What the service does", Authentication rule 6, Events `wallet.pregen_claimed`): once a
// wallet is claimed by its user, every REST signing route, share migration and PATCH refuse it with 403
// WALLET_CLAIMED and nothing is signed; the claim queues one `wallet.pregen_claimed` event.

let svc: TestService;
let partner: Partner;
let enclaveKey: EnclaveKey;

const MISSING = '00000000-0000-4000-8000-000000000000';
let counter = 0;
const uid = (p = 'claim') => `${p}-${++counter}-${Math.random().toString(36).slice(2)}`;

before(async () => {
  svc = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' });
  partner = await svc.newPartner();
  // Signatures write transaction.signed only for a key whose endpoint selects it: this one does (port 1 refuses).
  await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, {
    url: 'https://127.0.0.1:1/hook',
    events: ['transaction.signed'],
  });
  const k = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
  assert.equal(k.status, 200, JSON.stringify(k.body));
  enclaveKey = k.body;
});
after(async () => {
  await svc?.stop();
});

async function createWallet(type: 'EVM' | 'SOLANA', userIdentifier = uid('user')): Promise<WalletBody> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', { type, userIdentifier, userIdentifierType: 'EMAIL' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

const claim = (walletId: string, body?: unknown) => svc.admin('POST', `/wallets/${walletId}/claim`, body);

/** The outbox rows of one type about one wallet, read from the service database as an operator would. */
function outboxRows(type: string, walletId: string): Array<{ projectId: string; data: Record<string, unknown> }> {
  const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare('select project_id as projectId, data from outbox where type = ? order by seq')
      .all(type) as Array<{ projectId: string; data: string }>;
    return rows
      .map((r) => ({ projectId: r.projectId, data: JSON.parse(r.data) as Record<string, unknown> }))
      .filter((r) => r.data['walletId'] === walletId);
  } finally {
    db.close();
  }
}

function assertError(r: { status: number; body: any }, status: number, code: string, label = '') {
  assert.equal(r.status, status, `${label} ${JSON.stringify(r.body)}`);
  assert.equal(r.body?.code, code, `${label} ${JSON.stringify(r.body)}`);
  assert.equal(typeof r.body?.message, 'string', label);
}

// Bodies each signing route accepts for an unclaimed EVM wallet (proved before the claim in the test below).
const EVM_SIGNING: ReadonlyArray<[string, unknown]> = [
  ['sign-message', { message: 'hello from a claimed wallet?' }],
  ['sign-raw', { data: `0x${'ab'.repeat(32)}`, walletType: 'EVM' }],
  ['sign-transaction', { transaction: EVM_TRANSACTION }],
  ['sign-typed-data', { typedData: MAIL_TYPED_DATA }],
  ['sign-authorization', { authorization: { address: EVM_TRANSACTION.to, chainId: 1, nonce: 0 } }],
];
/** What a signing answer may carry: none of it may come back from a refused request. */
const SIGNED_FIELDS = ['signature', 'signedTransaction', 'r', 's', 'yParity', 'transaction'];

describe('POST /admin/v1/wallets/{walletId}/claim', () => {
  test('a managed wallet: 200 with the wallet, its project, claimedAt and userId; one wallet.pregen_claimed event', async () => {
    for (const type of ['EVM', 'SOLANA'] as const) {
      const w = await createWallet(type);
      const t0 = Date.now();
      const r = await claim(w.id);
      const t1 = Date.now();
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const { projectId, claimedAt, userId, ...walletFields } = r.body;
      assert.deepEqual(walletFields, w);
      assert.equal(projectId, partner.projectId);
      assert.equal(userId, w.userIdentifier, 'userId defaults to the wallet userIdentifier');
      assert.match(claimedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
      assert.ok(Date.parse(claimedAt) >= t0 - 1000 && Date.parse(claimedAt) <= t1 + 1000, claimedAt);

      const events = outboxRows('wallet.pregen_claimed', w.id);
      assert.equal(events.length, 1, JSON.stringify(events));
      assert.equal(events[0]!.projectId, partner.projectId);
      assert.deepEqual(events[0]!.data, {
        userId: w.id,
        walletId: w.id,
        walletAddress: w.address,
        walletType: type,
        claimedAt,
      });
    }
  });

  test('a claimed wallet: all five signing routes, migrate-share and PATCH are 403 WALLET_CLAIMED; nothing is signed; GET works', async () => {
    const w = await createWallet('EVM');
    // The bodies are valid: the unclaimed wallet signs each of them.
    for (const [route, body] of EVM_SIGNING) {
      const ok = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/${route}`, body);
      assert.equal(ok.status, 200, `${route} before the claim: ${JSON.stringify(ok.body)}`);
    }
    const patchBody = { userIdentifier: uid('renamed'), userIdentifierType: 'CUSTOM_ID' };
    const migrateBody = {
      encryptedPayload: JSON.stringify(
        encryptForEnclave(sharePlaintext([shareEntry(w.id, 'DKLS', randomSigner())]), enclaveKey),
      ),
    };
    assert.equal((await claim(w.id)).status, 200);

    const signedBefore = outboxRows('transaction.signed', w.id).length;
    assert.equal(signedBefore, EVM_SIGNING.length, 'each signature before the claim wrote its event');
    const before = snapshotDb(svc.dataDir);
    const refused: Array<[string, string, unknown]> = [
      ...EVM_SIGNING.map(([route, body]): [string, string, unknown] => ['POST', route, body]),
      ['POST', 'migrate-share', migrateBody],
      ['PATCH', '', patchBody],
    ];
    for (const [method, route, body] of refused) {
      const r = await svc.v1(partner.secret, method, `/wallets/${w.id}${route ? `/${route}` : ''}`, body);
      assertError(r, 403, 'WALLET_CLAIMED', `${method} ${route}`);
      for (const f of SIGNED_FIELDS) assert.equal(r.body[f], undefined, `${route} answered ${f}`);
    }
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), [], 'a refused request wrote something');
    assert.equal(outboxRows('transaction.signed', w.id).length, signedBefore);

    const got = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, w, 'the claimed wallet reads back unchanged');
    const listed = await svc.v1(partner.secret, 'GET', `/wallets?address=${w.address}`);
    assert.deepEqual(
      listed.body.data.map((x: { id: string }) => x.id),
      [w.id],
    );
  });

  test('a SOLANA claimed wallet refuses sign-message and sign-raw too', async () => {
    const w = await createWallet('SOLANA');
    assert.equal(
      (await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-message`, { message: 'hi' })).status,
      200,
    );
    assert.equal((await claim(w.id)).status, 200);
    const msg = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-message`, { message: 'hi' });
    assertError(msg, 403, 'WALLET_CLAIMED');
    const raw = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-raw`, {
      data: 'abcd',
      walletType: 'SOLANA',
    });
    assertError(raw, 403, 'WALLET_CLAIMED');
  });

  test('a second claim is 409 WALLET_ALREADY_CLAIMED and queues no second event; concurrent claims: one wins', async () => {
    const w = await createWallet('EVM');
    const first = await claim(w.id);
    assert.equal(first.status, 200);
    const again = await claim(w.id, { userId: 'someone-else' });
    assertError(again, 409, 'WALLET_ALREADY_CLAIMED');
    assert.equal(outboxRows('wallet.pregen_claimed', w.id).length, 1);

    const raced = await createWallet('EVM');
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(raced.id, { userId: `racer-${i}` })));
    const won = answers.filter((a) => a.status === 200);
    assert.equal(won.length, 1, JSON.stringify(answers.map((a) => a.status)));
    for (const a of answers.filter((x) => x.status !== 200)) assertError(a, 409, 'WALLET_ALREADY_CLAIMED');
    const events = outboxRows('wallet.pregen_claimed', raced.id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.data['userId'], won[0]!.body.userId);
  });

  test('a userId in the body is the claiming user, in the answer and in the event', async () => {
    const w = await createWallet('EVM');
    const r = await claim(w.id, { userId: 'partner-user-42' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.userId, 'partner-user-42');
    assert.equal(r.body.userIdentifier, w.userIdentifier, 'the identifier itself is not changed');
    const events = outboxRows('wallet.pregen_claimed', w.id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.data['userId'], 'partner-user-42');
    assert.equal(events[0]!.data['claimedAt'], r.body.claimedAt);
  });

  test('an unknown wallet is 404 WALLET_NOT_FOUND and nothing is written', async () => {
    const before = snapshotDb(svc.dataDir);
    assertError(await claim(MISSING), 404, 'WALLET_NOT_FOUND');
    assertError(await claim(partner.projectId), 404, 'WALLET_NOT_FOUND', 'a project id');
    assertError(await claim(MISSING, { userId: 'u' }), 404, 'WALLET_NOT_FOUND');
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
  });

  test('without the admin token: 401 or 403, never an API key, and the wallet stays unclaimed', async () => {
    const w = await createWallet('EVM');
    const token = svc.adminToken;
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{}, 401, 'ADMIN_TOKEN_REQUIRED'],
      [{ 'x-api-key': partner.secret }, 401, 'ADMIN_TOKEN_REQUIRED'],
      [{ authorization: 'Bearer wrong-token-0123456789' }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Bearer ${token}x` }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: token }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Bearer ${partner.secret}` }, 403, 'INVALID_ADMIN_TOKEN'],
    ];
    const before = snapshotDb(svc.dataDir);
    for (const [headers, status, code] of refusals) {
      for (const body of [undefined, { userId: 'intruder' }]) {
        const r: RawResponse = await rawRequest(svc.adminUrl, {
          method: 'POST',
          path: `/admin/v1/wallets/${w.id}/claim`,
          headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        assertError(r as { status: number; body: any }, status, code, JSON.stringify(headers));
        assert.ok(!r.text.includes(token) && !r.text.includes(partner.secret), 'a secret is echoed');
      }
    }
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
    const still = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-message`, { message: 'mine' });
    assert.equal(still.status, 200, JSON.stringify(still.body));
  });

  test('a pre-generated wallet can be claimed: then signing and migration are 403 WALLET_CLAIMED', async () => {
    const r = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, {
      type: 'EVM',
      userIdentifier: uid('pregen'),
      userIdentifierType: 'PHONE',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const { wallet, userShare } = r.body as { wallet: WalletBody; userShare: string };
    const locked = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/sign-message`, { message: 'x' });
    assertError(locked, 403, 'WALLET_SHARE_NOT_MIGRATED');

    const c = await claim(wallet.id);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.id, wallet.id);
    assert.equal(c.body.address, wallet.address);
    assert.equal(c.body.userId, wallet.userIdentifier);
    const events = outboxRows('wallet.pregen_claimed', wallet.id);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.data, {
      // Not the userIdentifier (a phone number here): the wallet's id.
      userId: wallet.id,
      walletId: wallet.id,
      walletAddress: wallet.address,
      walletType: 'EVM',
      claimedAt: c.body.claimedAt,
    });

    for (const [route, body] of EVM_SIGNING) {
      const s = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/${route}`, body);
      assertError(s, 403, 'WALLET_CLAIMED', route);
    }
    const m = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/migrate-share`, {
      encryptedPayload: migrationPayload(userShare, wallet, enclaveKey),
    });
    assertError(m, 403, 'WALLET_CLAIMED');
    assertError(
      await svc.v1(partner.secret, 'PATCH', `/wallets/${wallet.id}`, { userIdentifierType: 'EMAIL' }),
      403,
      'WALLET_CLAIMED',
    );
  });
});

describe('a claim that lands while a signature is being decided', () => {
  test('refuses that signature too: 403 WALLET_CLAIMED, and the enclave is not asked', {
    timeout: 60_000,
  }, async () => {
    let release: (() => void) | undefined;
    let asked: (() => void) | undefined;
    const policyAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    // A decision point that holds the first request until the test lets it go.
    const held = await startTestService(
      {},
      {
        api: {
          signaturePolicy: {
            decide: () =>
              new Promise((resolve) => {
                release = () => resolve({ effect: 'allow' });
                asked!();
              }),
          },
        },
      },
    );
    try {
      const owner = await held.newPartner();
      const created = await held.v1(owner.secret, 'POST', '/wallets', {
        type: 'EVM',
        userIdentifier: uid('held'),
        userIdentifierType: 'EMAIL',
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const signing = held.v1(owner.secret, 'POST', `/wallets/${created.body.id}/sign-message`, { message: 'hi' });
      await policyAsked;
      const claimed = await held.admin('POST', `/wallets/${created.body.id}/claim`);
      assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
      release!();
      const answer = await signing;
      assert.equal(answer.status, 403, JSON.stringify(answer.body));
      assert.equal(answer.body.code, 'WALLET_CLAIMED');
      assert.equal(answer.body.signature, undefined);
    } finally {
      await held.stop();
    }
  });
});
