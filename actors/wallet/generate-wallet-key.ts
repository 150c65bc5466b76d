import { compressSecp256k1PublicKey } from '../../chains/compress-secp256k1-public-key.ts';
import { deriveAddress } from '../../chains/derive-address.ts';
import { CodedError } from '../../chains/domain/errors.ts';
import { parseSecp256k1PublicKey } from '../../chains/parse-secp256k1-public-key.ts';
import type { EnclaveClient } from '../../enclave/client.ts';
import type { UserShareHandoff } from './user-share-handoff.ts';
import type { KeyMaterial, WalletInput } from './wallet.machine.ts';

/** A pre-generated wallet whose user share can no longer be handed out: it must not become ready. */
export class UserShareUnavailableError extends CodedError {
  override name = 'UserShareUnavailableError';
  constructor(message: string) {
    super('USER_SHARE_UNAVAILABLE', 500, message);
  }
}

/**
 * The wallet machine's side effect: asks the enclave for the wallet's key (durable in the enclave
 * before the answer) and derives the address the partner will see. For a pre-generated wallet the enclave
 * keeps only the service share and answers the user share once; it goes to `userShares`, never into the
 * actor's context. A restored actor whose key already exists gets no user share back, so that wallet is
 * abandoned rather than made ready without a user share anyone holds.
 */
export function createGenerateWalletKey(
  enclave: Pick<EnclaveClient, 'generateKey'>,
  userShares: Pick<UserShareHandoff, 'put'>,
) {
  return async (input: WalletInput): Promise<KeyMaterial> => {
    const { custody } = input;
    const { publicKey, userShare } = await enclave.generateKey({
      walletId: input.walletId,
      scheme: input.scheme,
      custody,
    });
    if (custody === 'pregen') {
      if (!userShare) {
        throw new UserShareUnavailableError(
          'the user share of this pre-generated wallet was already handed out or lost; create another wallet',
        );
      }
      userShares.put(input.walletId, userShare);
    }
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
