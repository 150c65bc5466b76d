import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { gcm } from '@noble/ciphers/aes.js';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hmac as nobleHmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import Database from 'better-sqlite3';
import { legacySeal, SCHEMA_1_SQL } from '../test/helpers/legacy-key-store.ts';
import {
  AES_256_GCM,
  createKeyRing,
  ECIES_CONTEXT,
  encodeAad,
  findOpeningKey,
  masterKeyId,
  packSealed,
  rewrap,
  type SealContext,
  type SealedBlob,
  type SealedShare,
  seal,
  shareContext,
  UNLABELED_KEY_ID,
  unpackSealed,
  unseal,
  XCHACHA20_POLY1305,
} from './envelope.ts';
import { createKeyStore, type NewKey, type RewrapCursor, type RewrapUpdate, SCHEMA_VERSION } from './key-store.ts';
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

/** masterKeyId of 32 bytes of 0x11, as `openssl dgst -sha256 -mac HMAC -macopt hexkey:1111…` computes it. */
const KEY_ID_OF_0x11 = '6b359d3121c41d4d';

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

/** Opens a record with @noble/ciphers only (an implementation independent of libsodium and OpenSSL). */
function nobleOpen(key: Uint8Array, context: SealContext, sealed: SealedBlob): Uint8Array {
  const open = (cipher: number, k: Uint8Array, nonce: Uint8Array, aad: Uint8Array, data: Uint8Array) =>
    cipher === XCHACHA20_POLY1305 ? xchacha20poly1305(k, nonce, aad).decrypt(data) : gcm(k, nonce, aad).decrypt(data);
  const dataKey = open(sealed.wrapCipher, key, sealed.dekIv, encodeAad('key', context), sealed.wrappedKey);
  return open(sealed.dataCipher, dataKey, sealed.iv, encodeAad('data', context), sealed.ciphertext);
}

describe('envelope sealing', () => {
  const context = shareContext('wallet-1', 'DKLS', 'service');
  const share = new Uint8Array(randomBytes(32));
  const sealed = seal(masterKey, context, share);

  test('round-trips; both layers are standard XChaCha20-Poly1305 with 24-byte nonces (noble opens them)', () => {
    assert.deepEqual(unseal(masterKey, context, sealed), share);
    assert.equal(sealed.wrapCipher, XCHACHA20_POLY1305);
    assert.equal(sealed.dataCipher, XCHACHA20_POLY1305);
    assert.equal(sealed.dekIv.length, 24);
    assert.equal(sealed.iv.length, 24);
    assert.equal(sealed.wrappedKey.length, 32 + 16);
    assert.deepEqual(nobleOpen(masterKey, context, sealed), share);
    // The wrap layer alone, by hand: the data key under the master key with the 'key' associated data.
    const dataKey = xchacha20poly1305(masterKey, sealed.dekIv, encodeAad('key', context)).decrypt(sealed.wrappedKey);
    assert.equal(dataKey.length, 32);
  });

  test('each record names its master key by a keyed hash of it (HMAC-SHA256, first 64 bits), never the key', () => {
    const expected = Buffer.from(nobleHmac(sha256, masterKey, new TextEncoder().encode('wcs-enclave-master-key-id')))
      .toString('hex')
      .slice(0, 16);
    assert.equal(masterKeyId(masterKey), expected);
    assert.equal(sealed.keyId, expected);
    // A fixed vector, so the formula docs/operations.md gives operators (openssl) stays true.
    assert.equal(masterKeyId(new Uint8Array(32).fill(0x11)), KEY_ID_OF_0x11);
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

  test('fails on any tampered byte, on another master key, and on a key id it does not hold', () => {
    const tampered: SealedBlob[] = [
      { ...sealed, ciphertext: flip(sealed.ciphertext) },
      { ...sealed, ciphertext: flip(sealed.ciphertext, sealed.ciphertext.length - 1) },
      { ...sealed, iv: flip(sealed.iv) },
      { ...sealed, iv: flip(sealed.iv, 23) },
      { ...sealed, wrappedKey: flip(sealed.wrappedKey, 5) },
      { ...sealed, dekIv: flip(sealed.dekIv) },
      { ...sealed, dekIv: flip(sealed.dekIv, 23) },
      { ...sealed, dataCipher: AES_256_GCM },
      { ...sealed, wrapCipher: AES_256_GCM },
    ];
    for (const record of tampered) assert.throws(() => unseal(masterKey, context, record));
    const other = new Uint8Array(randomBytes(32));
    assert.throws(
      () => unseal(other, context, sealed),
      new RegExp(`master key ${sealed.keyId}.*${masterKeyId(other)}`),
    );
    // Relabeled with the other key's id: that key is asked, and its tag check fails.
    assert.throws(() => unseal(other, context, { ...sealed, keyId: masterKeyId(other) }));
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
    assert.notDeepEqual(again.dekIv, sealed.dekIv);
  });

  test('records of the earlier AES-256-GCM format still open, and findOpeningKey tells which key wrapped them', () => {
    const legacy = legacySeal(masterKey, context, share);
    assert.deepEqual(unseal(masterKey, context, legacy), share);
    const other = new Uint8Array(randomBytes(32));
    assert.deepEqual(
      unseal(createKeyRing([other, masterKey]), context, legacy),
      share,
      'an unlabeled row: any held key',
    );
    assert.equal(findOpeningKey(createKeyRing([other, masterKey]), context, legacy), masterKeyId(masterKey));
    assert.equal(findOpeningKey(other, context, legacy), undefined);
    assert.throws(() => unseal(other, context, legacy));
  });

  test('rewrap moves the data key under the ring sealing key (XChaCha20-Poly1305) and leaves the data layer alone', () => {
    const newMaster = new Uint8Array(randomBytes(32));
    const ring = createKeyRing([masterKey, newMaster], masterKeyId(newMaster));
    for (const record of [sealed, { ...legacySeal(masterKey, context, share), keyId: masterKeyId(masterKey) }]) {
      const moved = { ...record, ...rewrap(ring, context, record) };
      assert.equal(moved.keyId, masterKeyId(newMaster));
      assert.equal(moved.wrapCipher, XCHACHA20_POLY1305);
      assert.equal(moved.dekIv.length, 24);
      assert.deepEqual(
        [moved.dataCipher, moved.iv, moved.ciphertext],
        [record.dataCipher, record.iv, record.ciphertext],
      );
      assert.deepEqual(unseal(newMaster, context, moved), share);
      assert.deepEqual(nobleOpen(newMaster, context, moved), share);
      assert.throws(() => unseal(masterKey, context, moved));
    }
    assert.throws(() => rewrap(createKeyRing([newMaster]), context, sealed), /does not hold/);
  });

  test('a ring seals with its sealing key and opens each record with the key that wrapped it', () => {
    const second = new Uint8Array(randomBytes(32));
    const ring = createKeyRing([masterKey, second], masterKeyId(second));
    const underSecond = seal(ring, context, share);
    assert.equal(underSecond.keyId, masterKeyId(second));
    assert.deepEqual(unseal(ring, context, underSecond), share);
    assert.deepEqual(unseal(ring, context, sealed), share);
    assert.throws(() => createKeyRing([masterKey], masterKeyId(second)), /sealing key/);
  });

  test('packSealed carries every field, key id and ciphers included', () => {
    const legacy = legacySeal(masterKey, context, share);
    const unpacked = unpackSealed(packSealed([sealed, legacy]));
    assert.deepEqual(
      unpacked.map((blob) => ({
        ...blob,
        dekIv: [...blob.dekIv],
        wrappedKey: [...blob.wrappedKey],
        iv: [...blob.iv],
        ciphertext: [...blob.ciphertext],
      })),
      [sealed, legacy].map((blob) => ({
        ...blob,
        dekIv: [...blob.dekIv],
        wrappedKey: [...blob.wrappedKey],
        iv: [...blob.iv],
        ciphertext: [...blob.ciphertext],
      })),
    );
    assert.deepEqual(unseal(masterKey, context, unpacked[0]!), share);
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
      effects: [],
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

  test('a schema 1 store is migrated: its rows read as unlabeled AES-256-GCM records, then take a key id', () => {
    const path = freshDbPath();
    const raw = new Database(path);
    raw.exec(SCHEMA_1_SQL);
    raw.pragma('user_version = 1');
    const now = new Date().toISOString();
    const service = new Uint8Array(32).fill(7);
    const legacy = legacySeal(masterKey, shareContext('old', 'DKLS', 'service'), service);
    raw.prepare("INSERT INTO keys VALUES ('old', 'DKLS', 'ab', ?)").run(now);
    raw
      .prepare("INSERT INTO shares VALUES ('old', 'service', ?, ?, ?, ?, ?)")
      .run(legacy.dekIv, legacy.wrappedKey, legacy.iv, legacy.ciphertext, now);
    const eciesSecret = new Uint8Array(32).fill(9);
    const ecies = legacySeal(masterKey, ECIES_CONTEXT, eciesSecret);
    raw
      .prepare("INSERT INTO sealed_keys VALUES ('ecies-p256', ?, ?, ?, ?, ?, ?)")
      .run(new Uint8Array(65).fill(4), ecies.dekIv, ecies.wrappedKey, ecies.iv, ecies.ciphertext, now);
    raw.close();

    const store = createKeyStore({ path });
    const read = store.getShares('old')[0]!;
    assert.deepEqual([read.keyId, read.wrapCipher, read.dataCipher], [UNLABELED_KEY_ID, AES_256_GCM, AES_256_GCM]);
    assert.deepEqual(unseal(masterKey, shareContext('old', 'DKLS', 'service'), read), service);
    assert.deepEqual(unseal(masterKey, ECIES_CONTEXT, store.getEciesKey()!.sealed), eciesSecret);
    assert.deepEqual(store.keyIdsInUse(), [UNLABELED_KEY_ID]);
    assert.equal(store.getSealKeyId(), undefined);

    assert.equal(store.labelUnlabeledRows(masterKeyId(masterKey)), 2);
    assert.deepEqual(store.keyIdsInUse(), [masterKeyId(masterKey)]);
    assert.deepEqual(unseal(masterKey, shareContext('old', 'DKLS', 'service'), store.getShares('old')[0]!), service);
    store.insertKeys([newKey('new')]);
    assert.deepEqual(store.countRowsByKeyId(), { [masterKeyId(masterKey)]: 4 });
    store.close();
    const check = new Database(path);
    assert.equal(check.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    check.close();
  });

  test('rotation primitives: pages of rows not under a key, compare-and-set updates of the wrap layer only', () => {
    const path = freshDbPath();
    const store = createKeyStore({ path });
    const keys = Array.from({ length: 305 }, (_, i) =>
      newKey(`r-${String(i).padStart(3, '0')}`, i % 2 ? 'DKLS' : 'ED25519'),
    );
    store.insertKeys(keys);
    store.insertEciesKey({
      publicKey: new Uint8Array(65).fill(4),
      sealed: seal(masterKey, ECIES_CONTEXT, new Uint8Array(32).fill(9)),
      generatedAt: new Date().toISOString(),
    });
    const newMaster = new Uint8Array(randomBytes(32));
    const ring = createKeyRing([masterKey, newMaster], masterKeyId(newMaster));
    const target = masterKeyId(newMaster);
    const before = store.getShares('r-007')[0]!;

    let cursor: RewrapCursor | undefined;
    let pages = 0;
    do {
      const page = store.rewrapPage(target, cursor, 100);
      const updates: RewrapUpdate[] = page.rows.map((row) => ({
        row:
          row.table === 'shares'
            ? { table: 'shares', walletId: row.walletId, kind: row.kind }
            : { table: 'sealed_keys', name: row.name },
        from: row.wrapped,
        to: rewrap(ring, row.context!, row.wrapped),
      }));
      assert.equal(store.applyRewrap(updates), page.rows.length);
      // The same updates again: the rows no longer have the wrap layer they were read with, nothing changes.
      assert.equal(store.applyRewrap(updates), 0);
      cursor = page.next;
      pages++;
    } while (cursor);
    assert.equal(pages, 7, '610 share rows in pages of 100');
    assert.deepEqual(store.keyIdsInUse().sort(), [masterKeyId(masterKey), target].sort(), 'the ECIES row is still old');
    const [ecies] = store.sealedKeysNotUnder(target);
    assert.equal(ecies?.table === 'sealed_keys' && ecies.name, 'ecies-p256');
    assert.deepEqual(ecies!.context, ECIES_CONTEXT);
    store.applyRewrap([
      {
        row: { table: 'sealed_keys', name: 'ecies-p256' },
        from: ecies!.wrapped,
        to: rewrap(ring, ECIES_CONTEXT, ecies!.wrapped),
      },
    ]);
    assert.deepEqual(store.keyIdsInUse(), [target]);
    assert.deepEqual(store.countRowsByKeyId(), { [target]: 611 });
    assert.deepEqual(store.rewrapPage(target, undefined, 100), { rows: [], next: undefined });

    const after = store.getShares('r-007')[0]!;
    assert.deepEqual([after.iv, after.ciphertext, after.dataCipher], [before.iv, before.ciphertext, before.dataCipher]);
    assert.equal(unseal(newMaster, shareContext('r-007', 'DKLS', 'service'), after).length, 32);
    assert.throws(() => unseal(masterKey, shareContext('r-007', 'DKLS', 'service'), after));
    assert.deepEqual(unseal(newMaster, ECIES_CONTEXT, store.getEciesKey()!.sealed), new Uint8Array(32).fill(9));

    store.setSealKeyId(target);
    assert.equal(store.getSealKeyId(), target);
    store.close();
  });

  test('keyIdsInUse finds every distinct key id with an index seek each', () => {
    const store = createKeyStore({ path: freshDbPath() });
    const extra = Array.from({ length: 3 }, () => new Uint8Array(randomBytes(32)));
    store.insertKeys([newKey('a'), newKey('b')]);
    for (const [i, key] of extra.entries()) {
      const record = newKey(`x-${i}`);
      record.shares = record.shares.map((share) => ({
        ...share,
        ...seal(key, shareContext(`x-${i}`, 'DKLS', share.kind), new Uint8Array(32)),
      }));
      store.insertKeys([record]);
    }
    assert.deepEqual(store.keyIdsInUse(), [masterKey, ...extra].map((key) => masterKeyId(key)).sort());
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
