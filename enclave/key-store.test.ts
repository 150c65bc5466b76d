import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { gcm } from '@noble/ciphers/aes.js';
import Database from 'better-sqlite3';
import { encodeAad, rewrap, type SealedBlob, type SealedShare, seal, shareContext, unseal } from './envelope.ts';
import { createKeyStore, type NewKey, SCHEMA_VERSION } from './key-store.ts';
import { createKeyWriter } from './key-writer.ts';

const dirs: string[] = [];
function freshDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'enclave-keystore-'));
  dirs.push(dir);
  return join(dir, 'keys.db');
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const masterKey = new Uint8Array(randomBytes(32));

function sealedShares(walletId: string, scheme: string, service: Uint8Array, user: Uint8Array): SealedShare[] {
  return [
    { kind: 'service', ...seal(masterKey, shareContext(walletId, scheme, 'service'), service) },
    { kind: 'user', ...seal(masterKey, shareContext(walletId, scheme, 'user'), user) },
  ];
}

function newKey(
  walletId: string,
  scheme: 'DKLS' | 'ED25519' = 'DKLS',
  publicKey = randomBytes(33).toString('hex'),
): NewKey {
  return {
    walletId,
    scheme,
    publicKey,
    shares: sealedShares(walletId, scheme, new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))),
  };
}

function flip(bytes: Uint8Array, index = 0): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[index]! ^= 0x01;
  return copy;
}

describe('envelope sealing', () => {
  const context = shareContext('wallet-1', 'DKLS', 'service');
  const share = new Uint8Array(randomBytes(32));
  const sealed = seal(masterKey, context, share);

  test('round-trips and is standard AES-256-GCM (noble opens both layers)', () => {
    assert.deepEqual(unseal(masterKey, context, sealed), share);
    const dataKey = gcm(masterKey, sealed.dekIv, encodeAad('key', context)).decrypt(sealed.wrappedKey);
    assert.deepEqual(gcm(dataKey, sealed.iv, encodeAad('data', context)).decrypt(sealed.ciphertext), share);
  });

  test('fails on other associated data: wallet id, scheme, share kind', () => {
    for (const other of [
      shareContext('wallet-2', 'DKLS', 'service'),
      shareContext('wallet-1', 'ED25519', 'service'),
      shareContext('wallet-1', 'DKLS', 'user'),
    ]) {
      assert.throws(() => unseal(masterKey, other, sealed));
    }
  });

  test('fails on any tampered byte and on another master key', () => {
    const tampered: SealedBlob[] = [
      { ...sealed, ciphertext: flip(sealed.ciphertext) },
      { ...sealed, ciphertext: flip(sealed.ciphertext, sealed.ciphertext.length - 1) },
      { ...sealed, iv: flip(sealed.iv) },
      { ...sealed, wrappedKey: flip(sealed.wrappedKey, 5) },
      { ...sealed, dekIv: flip(sealed.dekIv) },
    ];
    for (const record of tampered) assert.throws(() => unseal(masterKey, context, record));
    assert.throws(() => unseal(new Uint8Array(randomBytes(32)), context, sealed));
  });

  test('associated data keeps its encoding (records sealed earlier must still open)', () => {
    assert.equal(
      Buffer.from(encodeAad('key', shareContext('wället-1', 'DKLS', 'service'))).toString('hex'),
      '0000000e7763732d656e636c6176652d7631000000036b6579000000057368617265' +
        '0000000977c3a46c6c65742d3100000004444b4c530000000773657276696365',
    );
    assert.equal(
      Buffer.from(encodeAad('data', { type: 'ecies', curve: 'P-256' })).toString('hex'),
      '0000000e7763732d656e636c6176652d7631000000046461746100000005656369657300000005502d323536',
    );
  });

  test('associated data is unambiguous across field boundaries', () => {
    const a = encodeAad('data', shareContext('ab', 'c', 'user'));
    const b = encodeAad('data', shareContext('a', 'bc', 'user'));
    assert.notDeepEqual(a, b);
  });

  test('uses a fresh data key and nonces per record', () => {
    const again = seal(masterKey, context, share);
    assert.notDeepEqual(again.ciphertext, sealed.ciphertext);
    assert.notDeepEqual(again.wrappedKey, sealed.wrappedKey);
    assert.notDeepEqual(again.iv, sealed.iv);
  });

  test('rewrap moves the data key to a new master key and leaves the ciphertext alone', () => {
    const newMaster = new Uint8Array(randomBytes(32));
    const moved = { ...sealed, ...rewrap(masterKey, newMaster, context, sealed) };
    assert.deepEqual(moved.ciphertext, sealed.ciphertext);
    assert.deepEqual(unseal(newMaster, context, moved), share);
    assert.throws(() => unseal(masterKey, context, moved));
  });
});

describe('key store', () => {
  test('stores no plaintext share: the raw database bytes never contain one', () => {
    const path = freshDbPath();
    const store = createKeyStore({ path });
    const service = new Uint8Array(randomBytes(32));
    const user = new Uint8Array(randomBytes(32));
    store.insertKeys([
      { walletId: 'w-plain', scheme: 'DKLS', publicKey: 'ab', shares: sealedShares('w-plain', 'DKLS', service, user) },
    ]);
    const shares = store.getShares('w-plain');
    assert.deepEqual(
      shares.map((s) => s.kind),
      ['service', 'user'],
    );
    assert.deepEqual(unseal(masterKey, shareContext('w-plain', 'DKLS', 'user'), shares[1]!), user);
    store.close();
    const bytes = Buffer.concat(
      ['', '-wal'].flatMap((suffix) => {
        try {
          return [readFileSync(path + suffix)];
        } catch {
          return [];
        }
      }),
    );
    assert.ok(bytes.includes(Buffer.from('w-plain')), 'the scan reads the records');
    assert.equal(bytes.includes(Buffer.from(service)), false);
    assert.equal(bytes.includes(Buffer.from(user)), false);
    assert.equal(bytes.includes(Buffer.from(service).toString('hex')), false);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  test('tampering a stored ciphertext or moving it to another wallet makes unsealing fail', () => {
    const path = freshDbPath();
    const store = createKeyStore({ path });
    store.insertKeys([newKey('w-a'), newKey('w-b')]);
    store.close();
    const raw = new Database(path);
    const row = raw.prepare("SELECT ciphertext FROM shares WHERE wallet_id = 'w-a' AND kind = 'service'").get() as {
      ciphertext: Buffer;
    };
    raw
      .prepare("UPDATE shares SET ciphertext = ? WHERE wallet_id = 'w-a' AND kind = 'service'")
      .run(flip(row.ciphertext, 3));
    // Copy w-b's user share over w-a's: the associated data no longer matches.
    raw
      .prepare(
        "UPDATE shares SET (dek_iv, wrapped_key, iv, ciphertext) = (SELECT dek_iv, wrapped_key, iv, ciphertext FROM shares WHERE wallet_id = 'w-b' AND kind = 'user') WHERE wallet_id = 'w-a' AND kind = 'user'",
      )
      .run();
    raw.close();
    const reopened = createKeyStore({ path });
    const [service, user] = reopened.getShares('w-a');
    assert.throws(() => unseal(masterKey, shareContext('w-a', 'DKLS', 'service'), service!));
    assert.throws(() => unseal(masterKey, shareContext('w-a', 'DKLS', 'user'), user!));
    reopened.close();
  });

  test('a batch with the same wallet id twice stores one key; both answer the winner', () => {
    const store = createKeyStore({ path: freshDbPath() });
    const first = newKey('dup', 'DKLS', 'aa');
    const second = newKey('dup', 'DKLS', 'bb');
    const outcomes = store.insertKeys([first, newKey('other'), second]);
    assert.equal(outcomes[0]!.created, true);
    assert.equal(outcomes[2]!.created, false);
    assert.equal(outcomes[2]!.record.publicKey, 'aa');
    assert.equal(store.getKey('dup')!.publicKey, 'aa');
    const later = store.insertKeys([newKey('dup', 'ED25519', 'cc')]);
    assert.equal(later[0]!.created, false);
    assert.equal(later[0]!.record.scheme, 'DKLS');
    assert.equal(store.getShares('dup').length, 2);
    store.close();
  });

  test('getStoredKey reads a key with its shares; user shares are added once, only for existing keys', () => {
    const store = createKeyStore({ path: freshDbPath() });
    const managed = newKey('managed', 'DKLS', 'aa');
    const pregen = { ...newKey('pregen', 'ED25519', 'bb') };
    pregen.shares = pregen.shares.filter((share) => share.kind === 'service');
    store.insertKeys([managed, pregen]);
    assert.equal(store.getStoredKey('nobody'), undefined);
    const stored = store.getStoredKey('managed')!;
    assert.equal(stored.scheme, 'DKLS');
    assert.equal(stored.publicKey, 'aa');
    assert.deepEqual(stored.service!.ciphertext, Buffer.from(managed.shares[0]!.ciphertext));
    assert.deepEqual(stored.user!.ciphertext, Buffer.from(managed.shares[1]!.ciphertext));
    assert.equal(store.getStoredKey('pregen')!.user, undefined);

    const share = seal(masterKey, shareContext('pregen', 'ED25519', 'user'), new Uint8Array(32).fill(5));
    const outcomes = store.write({
      keys: [newKey('fresh')],
      userShares: [
        { walletId: 'pregen', share },
        { walletId: 'pregen', share },
        { walletId: 'managed', share },
        { walletId: 'nobody', share },
      ],
    });
    assert.deepEqual(outcomes.userShares, ['created', 'exists', 'exists', 'no-key']);
    assert.equal(outcomes.keys[0]!.created, true, 'the rest of the batch commits');
    assert.deepEqual(store.getStoredKey('pregen')!.user!.ciphertext, Buffer.from(share.ciphertext));
    assert.deepEqual(
      store.getStoredKey('managed')!.user!.ciphertext,
      Buffer.from(managed.shares[1]!.ciphertext),
      'kept',
    );
    store.close();
  });

  test('schema creation is idempotent and versioned; a newer schema is refused', () => {
    const path = freshDbPath();
    createKeyStore({ path }).close();
    const store = createKeyStore({ path });
    store.insertKeys([newKey('kept')]);
    store.close();
    const raw = new Database(path);
    assert.equal(raw.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    assert.throws(() => createKeyStore({ path }), /newer/);
  });

  test('rewrapAll re-wraps every data key under the new master key, all or nothing', () => {
    const path = freshDbPath();
    const store = createKeyStore({ path });
    const keys = Array.from({ length: 1205 }, (_, i) => newKey(`r-${i}`, i % 2 ? 'DKLS' : 'ED25519'));
    store.insertKeys(keys);
    const ecies = seal(masterKey, { type: 'ecies', curve: 'P-256' }, new Uint8Array(32).fill(9));
    store.insertEciesKey({
      publicKey: new Uint8Array(65).fill(4),
      sealed: ecies,
      generatedAt: new Date().toISOString(),
    });
    const before = store.getShares('r-7')[0]!;

    const wrongKey = new Uint8Array(randomBytes(32));
    assert.throws(() => store.rewrapAll(wrongKey, new Uint8Array(randomBytes(32))));
    assert.deepEqual(store.getShares('r-7')[0]!.wrappedKey, before.wrappedKey, 'a failed rotation changes nothing');

    const newMaster = new Uint8Array(randomBytes(32));
    assert.equal(store.rewrapAll(masterKey, newMaster), 1205 * 2 + 1);
    for (const walletId of ['r-0', 'r-7', 'r-1204']) {
      const record = store.getKey(walletId)!;
      for (const share of store.getShares(walletId)) {
        const context = shareContext(walletId, record.scheme, share.kind);
        assert.equal(unseal(newMaster, context, share).length, 32);
        assert.throws(() => unseal(masterKey, context, share));
      }
    }
    const after = store.getShares('r-7')[0]!;
    assert.deepEqual(after.ciphertext, before.ciphertext);
    assert.deepEqual(
      unseal(newMaster, { type: 'ecies', curve: 'P-256' }, store.getEciesKey()!.sealed),
      new Uint8Array(32).fill(9),
    );
    store.close();
  });
});

describe('key writer (group commit on its own thread)', () => {
  test('commits the inserts of one turn together and answers each after the commit', async () => {
    const path = freshDbPath();
    createKeyStore({ path }).close();
    const writer = createKeyWriter({ path });
    try {
      const outcomes = await Promise.all([
        writer.insertKey(newKey('g-1', 'DKLS', '01')),
        writer.insertKey(newKey('g-2', 'ED25519', '02')),
        writer.insertKey(newKey('g-same', 'DKLS', '03')),
        writer.insertKey(newKey('g-same', 'DKLS', '04')),
      ]);
      assert.deepEqual(
        outcomes.map((o) => [o.created, o.record.publicKey]),
        [
          [true, '01'],
          [true, '02'],
          [true, '03'],
          [false, '03'],
        ],
      );
      // Committed (durable) by the time the promises resolved: visible from another connection.
      const reader = createKeyStore({ path });
      assert.equal(reader.getKey('g-2')!.scheme, 'ED25519');
      assert.equal(reader.getKey('g-same')!.publicKey, '03');
      const batches = new Set(['g-1', 'g-2', 'g-same'].map((id) => reader.getKey(id)!.createdAt));
      assert.equal(batches.size, 1, 'one transaction');
      reader.close();

      // Inserts arriving while a commit is under way go together in the next one.
      const many = await Promise.all(Array.from({ length: 300 }, (_, i) => writer.insertKey(newKey(`m-${i}`))));
      assert.ok(many.every((o) => o.created));

      // User shares go through the same group commit, after the keys of their batch.
      const pregen = newKey('g-pregen', 'DKLS', '05');
      pregen.shares = pregen.shares.filter((share) => share.kind === 'service');
      const share = seal(masterKey, shareContext('g-pregen', 'DKLS', 'user'), new Uint8Array(32).fill(1));
      const [keyOutcome, first, second] = await Promise.all([
        writer.insertKey(pregen),
        writer.insertUserShare({ walletId: 'g-pregen', share }),
        writer.insertUserShare({ walletId: 'g-pregen', share }),
      ]);
      assert.deepEqual([keyOutcome.created, first, second], [true, 'created', 'exists']);
      const check = createKeyStore({ path });
      assert.deepEqual(check.getStoredKey('g-pregen')!.user!.ciphertext, Buffer.from(share.ciphertext));
      check.close();
    } finally {
      await writer.close();
    }
    await assert.rejects(writer.insertKey(newKey('late')), /closed/);
    await assert.rejects(writer.insertUserShare({ walletId: 'late', share: newKey('late').shares[1]! }), /closed/);
  });
});
