/**
 * Enclave key stores as earlier versions wrote them: schema 1 (AES-256-GCM in both layers, 12-byte random nonces,
 * no key id per row), and schema 2 (key ids and ciphers per row, `meta`; no effect records). For tests that check
 * such stores still open and are migrated.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { gcm } from '@noble/ciphers/aes.js';
import { p256 } from '@noble/curves/nist.js';
import Database from 'better-sqlite3';
import {
  AES_256_GCM,
  ECIES_CONTEXT,
  encodeAad,
  masterKeyId,
  type SealContext,
  type SealedBlob,
  shareContext,
  UNLABELED_KEY_ID,
} from '../../enclave/envelope.ts';
import type { Scheme } from '../../enclave/protocol.ts';
import { derivePublicKey, xor } from '../../enclave/shares.ts';

/** Key store schema 1, as earlier versions created it. */
export const SCHEMA_1_SQL = `
CREATE TABLE keys (
  wallet_id  TEXT PRIMARY KEY,
  scheme     TEXT NOT NULL CHECK (scheme IN ('DKLS', 'ED25519')),
  public_key TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE shares (
  wallet_id   TEXT NOT NULL REFERENCES keys (wallet_id),
  kind        TEXT NOT NULL CHECK (kind IN ('service', 'user')),
  dek_iv      BLOB NOT NULL,
  wrapped_key BLOB NOT NULL,
  iv          BLOB NOT NULL,
  ciphertext  BLOB NOT NULL,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (wallet_id, kind)
) WITHOUT ROWID;
CREATE TABLE sealed_keys (
  name        TEXT PRIMARY KEY,
  public_key  BLOB NOT NULL,
  dek_iv      BLOB NOT NULL,
  wrapped_key BLOB NOT NULL,
  iv          BLOB NOT NULL,
  ciphertext  BLOB NOT NULL,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;
`;

/**
 * What schema 2's migration added to a schema 1 store, as that release ran it (key ids and ciphers per row, meta).
 * A store of schema 2 is a schema 1 store with these statements applied and `user_version = 2`.
 */
export const SCHEMA_2_UPGRADE_SQL = `
ALTER TABLE shares ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE shares ADD COLUMN wrap_cipher INTEGER NOT NULL DEFAULT 1 CHECK (wrap_cipher IN (1, 2));
ALTER TABLE shares ADD COLUMN data_cipher INTEGER NOT NULL DEFAULT 1 CHECK (data_cipher IN (1, 2));
ALTER TABLE sealed_keys ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sealed_keys ADD COLUMN wrap_cipher INTEGER NOT NULL DEFAULT 1 CHECK (wrap_cipher IN (1, 2));
ALTER TABLE sealed_keys ADD COLUMN data_cipher INTEGER NOT NULL DEFAULT 1 CHECK (data_cipher IN (1, 2));
CREATE INDEX shares_by_key_id ON shares (key_id);
CREATE TABLE meta (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
`;

/** Seals a record exactly as schema 1 did (with @noble/ciphers' AES-GCM, independent of the enclave's code). */
export function legacySeal(key: Uint8Array, context: SealContext, plaintext: Uint8Array): SealedBlob {
  const dataKey = new Uint8Array(randomBytes(32));
  const iv = new Uint8Array(randomBytes(12));
  const dekIv = new Uint8Array(randomBytes(12));
  return {
    keyId: UNLABELED_KEY_ID,
    wrapCipher: AES_256_GCM,
    dekIv,
    wrappedKey: gcm(key, dekIv, encodeAad('key', context)).encrypt(dataKey),
    dataCipher: AES_256_GCM,
    iv,
    ciphertext: gcm(dataKey, iv, encodeAad('data', context)).encrypt(plaintext),
  };
}

/** A random key of `scheme` split into a service and a user share (a 2-of-2 XOR split, as the enclave makes). */
export function randomSplitKey(scheme: Scheme): { publicKey: Uint8Array; service: Uint8Array; user: Uint8Array } {
  let secret: Uint8Array;
  let publicKey: Uint8Array | undefined;
  do {
    secret = new Uint8Array(randomBytes(32));
    publicKey = derivePublicKey(scheme, secret);
  } while (!publicKey);
  const service = new Uint8Array(randomBytes(32));
  const user = xor(secret, service);
  secret.fill(0);
  return { publicKey, service, user };
}

/** A wallet written into a legacy store: its id, scheme and public key (hex, as the enclave stores it). */
export interface LegacyWallet {
  walletId: string;
  scheme: Scheme;
  publicKey: string;
}

/**
 * Creates `path` as a schema 1 key store under `masterKey`: an ECIES key and `count` managed wallets (both shares),
 * alternating DKLS and ED25519.
 */
export function writeLegacyKeyStore(path: string, masterKey: Uint8Array, count: number): LegacyWallet[] {
  // Created 0600, as the key store of that version created its file (a looser mode refuses the start).
  closeSync(openSync(path, 'a', 0o600));
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(SCHEMA_1_SQL);
    db.pragma('user_version = 1');
    const now = new Date().toISOString();
    const eciesSecret = p256.utils.randomSecretKey();
    const ecies = legacySeal(masterKey, ECIES_CONTEXT, eciesSecret);
    db.prepare("INSERT INTO sealed_keys VALUES ('ecies-p256', ?, ?, ?, ?, ?, ?)").run(
      p256.getPublicKey(eciesSecret, false),
      ecies.dekIv,
      ecies.wrappedKey,
      ecies.iv,
      ecies.ciphertext,
      now,
    );
    const insertKey = db.prepare('INSERT INTO keys VALUES (?, ?, ?, ?)');
    const insertShare = db.prepare('INSERT INTO shares VALUES (?, ?, ?, ?, ?, ?, ?)');
    const wallets: LegacyWallet[] = [];
    for (let i = 0; i < count; i++) {
      const scheme: Scheme = i % 2 ? 'ED25519' : 'DKLS';
      const walletId = `legacy-${i}`;
      const { publicKey, service, user } = randomSplitKey(scheme);
      const hex = Buffer.from(publicKey).toString('hex');
      insertKey.run(walletId, scheme, hex, now);
      for (const [kind, share] of [
        ['service', service],
        ['user', user],
      ] as const) {
        const sealed = legacySeal(masterKey, shareContext(walletId, scheme, kind), share);
        insertShare.run(walletId, kind, sealed.dekIv, sealed.wrappedKey, sealed.iv, sealed.ciphertext, now);
      }
      wallets.push({ walletId, scheme, publicKey: hex });
    }
    return wallets;
  } finally {
    db.close();
  }
}

/**
 * Creates `path` as a schema 2 key store, as a release of that schema left it after its first start: the wallets of
 * `writeLegacyKeyStore`, the schema 2 columns, every row labeled with `masterKey`'s id and `meta.seal_key_id` set.
 */
export function writeSchema2KeyStore(path: string, masterKey: Uint8Array, count: number): LegacyWallet[] {
  const wallets = writeLegacyKeyStore(path, masterKey, count);
  const db = new Database(path);
  try {
    const keyId = masterKeyId(masterKey);
    db.transaction(() => {
      db.exec(SCHEMA_2_UPGRADE_SQL);
      db.prepare('UPDATE shares SET key_id = ?').run(keyId);
      db.prepare('UPDATE sealed_keys SET key_id = ?').run(keyId);
      db.prepare("INSERT INTO meta (name, value) VALUES ('seal_key_id', ?)").run(keyId);
      db.pragma('user_version = 2');
    })();
    return wallets;
  } finally {
    db.close();
  }
}
