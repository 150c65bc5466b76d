/**
 * A wallet's key as everything that signs with it sees it: the signing routes and the payment actor's sign effect.
 * It refuses a wallet that may not sign over REST now (claimed, not ready, a pre-generated one without its user
 * share) and asks the enclave, which combines the shares, signs and verifies its own signature; nothing here holds
 * key material.
 */
import { ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import type { Ed25519Signature, Secp256k1Signature } from '../../chains/signing-types.ts';
import type { SigningWallet, WalletKey } from '../../chains/wallet-family.ts';
import type { EnclaveClient } from '../../enclave/client.ts';
import type { WalletRow, WalletsRepo } from '../../store/wallets-repo.ts';

function fromHex(hex: string): Uint8Array {
  return Buffer.from(hex, 'hex');
}

export function createWalletSigner(deps: { wallets: Pick<WalletsRepo, 'get'>; enclave: Pick<EnclaveClient, 'sign'> }) {
  const { wallets, enclave } = deps;

  /** The wallet if it may sign over REST now (whatever the operation); otherwise the answer explaining why not. */
  function walletThatSigns(projectId: string, walletId: string): WalletRow {
    const wallet = wallets.get(projectId, walletId);
    if (!wallet) throw walletNotFound();
    if (wallet.claimedAt) {
      throw new ServiceError(
        'WALLET_CLAIMED',
        403,
        'the wallet has been claimed by its user: REST signing is refused, sign through a user session',
        { details: { walletId } },
      );
    }
    if (wallet.status !== 'ready' || !wallet.publicKey) {
      throw new ServiceError('WALLET_NOT_READY', 400, 'the wallet is still being created; retry shortly', {
        details: { walletId },
      });
    }
    if (wallet.custody === 'pregen' && !wallet.shareMigratedAt) {
      throw new ServiceError(
        'WALLET_SHARE_NOT_MIGRATED',
        403,
        "this pre-generated wallet's user share is not in the service: migrate it with POST /v1/wallets/{walletId}/migrate-share before signing over REST",
        { details: { walletId } },
      );
    }
    return wallet;
  }

  /** `effectKey`: the signing effect's durable idempotency key, for the enclave to sign at most once under it. */
  async function enclaveSign(wallet: WalletRow, message: Uint8Array, effectKey?: string) {
    // Checked again right before the enclave: a claim committed while this signature's input was prepared (on a
    // worker, for a large one) or its policy decided refuses the signature too.
    walletThatSigns(wallet.projectId, wallet.id);
    try {
      return await enclave.sign({
        walletId: wallet.id,
        scheme: wallet.scheme,
        message: Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('base64'),
        ...(effectKey === undefined ? {} : { effectKey }),
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'SHARE_MISSING') {
        throw new ServiceError(
          'WALLET_SHARE_NOT_MIGRATED',
          403,
          "the wallet's user share is not in the service: migrate it before signing over REST",
          { details: { walletId: wallet.id } },
        );
      }
      if (code === 'ALREADY_SIGNED') {
        // The enclave made a signature under this effect's key before, for another message: an earlier run of a
        // signing step that should never run twice. Reported as an interrupted signing is (the payment machine fails
        // it at `mpc_sign` and never signs it again), with what happened as its message.
        throw new ServiceError(
          'SIGNING_INTERRUPTED',
          503,
          'the enclave already signed another message for this signing step; it is never signed again automatically ' +
            'and nothing was broadcast',
          { cause: err },
        );
      }
      throw err;
    }
  }

  async function signSecp256k1(wallet: WalletRow, digest: Uint8Array, effectKey?: string): Promise<Secp256k1Signature> {
    const { signature, recovery } = await enclaveSign(wallet, digest, effectKey);
    if (recovery !== 0 && recovery !== 1)
      throw new Error('the enclave answered a secp256k1 signature without recovery');
    return { rs: fromHex(signature), recovery };
  }

  async function signEd25519(wallet: WalletRow, message: Uint8Array, effectKey?: string): Promise<Ed25519Signature> {
    return fromHex((await enclaveSign(wallet, message, effectKey)).signature);
  }

  /** What an adapter sees of the wallet while it prepares a signature. */
  function signingWallet(wallet: WalletRow): SigningWallet {
    return { address: wallet.address!, publicKey: fromHex(wallet.publicKey!) };
  }

  /**
   * Keys already built, by wallet row: the store caches rows and replaces a row object whenever the wallet changes,
   * so an entry never outlives the row it was built from (and goes with it).
   */
  const keys = new WeakMap<WalletRow, WalletKey>();

  /**
   * The wallet's key as an adapter signs with it; handed over only once the policy has allowed the signature.
   *
   * With `effectKey` (an effect's durable idempotency key, actors/host/types.ts `EffectContext.key`), every signature
   * carries it to the enclave, which signs at most one message per key (enclave/protocol.ts, `sign`): the first
   * signature under `effectKey`, the n-th after it under `effectKey#n`, so an effect that runs again makes the same
   * requests under the same keys. Such a key is made for one run of one effect, never cached.
   */
  function keyOf(wallet: WalletRow, options?: { effectKey: string }): WalletKey {
    if (options) {
      const { effectKey } = options;
      let signatures = 0;
      const next = () => {
        const index = signatures++;
        return index === 0 ? effectKey : `${effectKey}#${index}`;
      };
      return {
        ...signingWallet(wallet),
        signSecp256k1: (digest) => signSecp256k1(wallet, digest, next()),
        signEd25519: (message) => signEd25519(wallet, message, next()),
      };
    }
    let key = keys.get(wallet);
    if (!key) {
      key = {
        ...signingWallet(wallet),
        signSecp256k1: (digest) => signSecp256k1(wallet, digest),
        signEd25519: (message) => signEd25519(wallet, message),
      };
      keys.set(wallet, key);
    }
    return key;
  }

  return { walletThatSigns, signingWallet, keyOf };
}

export type WalletSigner = ReturnType<typeof createWalletSigner>;
