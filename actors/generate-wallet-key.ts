import { compressSecp256k1PublicKey } from '../chains/compress-secp256k1-public-key.ts';
import { deriveAddress } from '../chains/derive-address.ts';
import { parseSecp256k1PublicKey } from '../chains/parse-secp256k1-public-key.ts';
import type { EnclaveClient } from '../enclave/client.ts';
import type { KeyMaterial, WalletInput } from './wallet.machine.ts';

/**
 * The wallet machine's side effect: asks the enclave for the wallet's key (durable in the enclave
 * before the answer) and derives the address the partner will see.
 */
export function createGenerateWalletKey(enclave: Pick<EnclaveClient, 'generateKey'>) {
  return async (input: WalletInput): Promise<KeyMaterial> => {
    const { publicKey } = await enclave.generateKey({ walletId: input.walletId, scheme: input.scheme });
    const address = deriveAddress({
      type: input.type,
      publicKeyHex: publicKey,
      cosmosPrefix: input.cosmosPrefix ?? undefined,
    });
    const shown =
      input.type === 'COSMOS'
        ? Buffer.from(compressSecp256k1PublicKey(parseSecp256k1PublicKey(publicKey))).toString('hex')
        : publicKey;
    return { publicKey: shown, address };
  };
}
