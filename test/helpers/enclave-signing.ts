/** Signs through the enclave client and checks the signature with noble (independent of the enclave's code). */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { EnclaveClient } from '../../enclave/client.ts';
import type { Scheme } from '../../enclave/protocol.ts';

/** Signs a random message for the wallet and asserts the signature verifies under its public key (hex). */
export async function signAndVerify(
  client: Pick<EnclaveClient, 'sign'>,
  wallet: { walletId: string; scheme: Scheme; publicKey: string },
): Promise<void> {
  const message = new Uint8Array(randomBytes(32));
  const { signature } = await client.sign({
    walletId: wallet.walletId,
    scheme: wallet.scheme,
    message: Buffer.from(message).toString('base64'),
  });
  const ok =
    wallet.scheme === 'DKLS'
      ? secp256k1.verify(Buffer.from(signature, 'hex'), message, Buffer.from(wallet.publicKey, 'hex'), {
          prehash: false,
        })
      : ed25519.verify(Buffer.from(signature, 'hex'), message, Buffer.from(wallet.publicKey, 'hex'));
  assert.ok(ok, `the signature of wallet ${wallet.walletId} verifies`);
}
