/**
 * The enclave's Ed25519 identity key, main-thread side: it proves to the API that it talks to this enclave
 * (identity.ts has the handshake). Generated at first start, its 32-byte seed sealed under the master key in
 * `keys.db` like the ECIES key, and checked at every start. The seed is only ever opened inside crypto workers
 * (identity-sign.ts), which sign handshakes: this thread holds the public key and the sealed row.
 */
import type { CryptoPool } from './crypto-pool.ts';
import type { SealedBlob } from './envelope.ts';
import { identityFingerprint } from './identity.ts';
import type { IdentityKeyRecord, KeyStore } from './key-store.ts';

/** The identity key as the enclave's main thread holds it: public data and the sealed row only. */
export interface IdentityKey {
  publicKey: Uint8Array;
  sealed: SealedBlob;
  fingerprint: string;
  generatedAt: string;
}

/**
 * Main thread, at start: loads the identity key, generating and storing it on first start (also the first start of
 * a store created before identity keys existed). An existing key must open under the master key and match its
 * public key, or the start fails.
 */
export async function ensureIdentityKey(deps: {
  store: Pick<KeyStore, 'getIdentityKey' | 'insertIdentityKey'>;
  crypto: Pick<CryptoPool, 'generateIdentityKey' | 'checkIdentityKey'>;
}): Promise<IdentityKey & { created: boolean }> {
  const existing: IdentityKeyRecord | undefined = deps.store.getIdentityKey();
  if (existing) {
    if (!(await deps.crypto.checkIdentityKey({ publicKey: existing.publicKey, sealed: existing.sealed }))) {
      throw new Error('the enclave identity key in keys.db does not open under this master key or is damaged');
    }
    // Exact-size copies: SQLite's Buffers may be views on a larger slab, which posting to a worker would copy whole.
    const publicKey = new Uint8Array(existing.publicKey);
    const sealed: SealedBlob = {
      ...existing.sealed,
      dekIv: new Uint8Array(existing.sealed.dekIv),
      wrappedKey: new Uint8Array(existing.sealed.wrappedKey),
      iv: new Uint8Array(existing.sealed.iv),
      ciphertext: new Uint8Array(existing.sealed.ciphertext),
    };
    return {
      publicKey,
      sealed,
      generatedAt: existing.generatedAt,
      fingerprint: identityFingerprint(publicKey),
      created: false,
    };
  }
  const generated = await deps.crypto.generateIdentityKey();
  const generatedAt = new Date().toISOString();
  deps.store.insertIdentityKey({ ...generated, generatedAt });
  return { ...generated, generatedAt, fingerprint: identityFingerprint(generated.publicKey), created: true };
}
