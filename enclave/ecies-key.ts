/**
 * The enclave's P-256 ECIES key (for share migration): generated and sealed at first start, checked against the
 * master key at every later start, published as an SPKI PEM with its fingerprint.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { InternalError } from '../chains/domain/errors.ts';
import type { CryptoPool } from './crypto-pool.ts';
import type { KeyStore } from './key-store.ts';
import type { EnclaveOps } from './protocol.ts';

export type EciesPublicKey = EnclaveOps['getEciesPublicKey']['result'];

/** The master key given does not open this store: the operator pointed the enclave at the wrong key. */
export class WrongMasterKeyError extends InternalError {
  override name = 'WrongMasterKeyError';
  constructor(message: string) {
    super('WRONG_MASTER_KEY', message);
  }
}

/** SPKI PEM and fingerprint (hex SHA-256 of the SPKI DER) of an uncompressed P-256 point. */
export function describeEciesPublicKey(point: Uint8Array, generatedAt: string): EciesPublicKey {
  if (point.length !== 65 || point[0] !== 0x04) throw new Error('ECIES public key must be an uncompressed P-256 point');
  const bytes = Buffer.from(point);
  const key = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: bytes.subarray(1, 33).toString('base64url'),
      y: bytes.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  const der = key.export({ type: 'spki', format: 'der' });
  return {
    publicKeyPem: key.export({ type: 'spki', format: 'pem' }).toString(),
    keyFingerprint: createHash('sha256').update(der).digest('hex'),
    generatedAt,
  };
}

/**
 * Loads the ECIES key, generating it on first start. On later starts the sealed private key is opened in a
 * worker and matched against the stored public key, which fails clearly when the master key is not the one
 * the store was sealed with.
 */
export async function ensureEciesKey(deps: {
  store: Pick<KeyStore, 'getEciesKey' | 'insertEciesKey'>;
  crypto: Pick<CryptoPool, 'generateEciesKey' | 'checkEciesKey'>;
}): Promise<EciesPublicKey> {
  const existing = deps.store.getEciesKey();
  if (existing) {
    if (!(await deps.crypto.checkEciesKey({ publicKey: existing.publicKey, sealed: existing.sealed }))) {
      throw new WrongMasterKeyError(
        'the master key does not open this enclave key store (wrong ENCLAVE_MASTER_KEY or master.key?)',
      );
    }
    return describeEciesPublicKey(existing.publicKey, existing.generatedAt);
  }
  const generated = await deps.crypto.generateEciesKey();
  const generatedAt = new Date().toISOString();
  deps.store.insertEciesKey({ ...generated, generatedAt });
  return describeEciesPublicKey(generated.publicKey, generatedAt);
}
