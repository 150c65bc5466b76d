import type { WalletType } from './domain/wallets.ts';
import { walletFamilies } from './wallet-families.ts';

export interface DeriveAddressInput {
  type: WalletType;
  /** Hex without 0x as the enclave returns it: 65-byte uncompressed secp256k1 (EVM, COSMOS) or 32-byte ed25519. */
  publicKeyHex: string;
  /** COSMOS only; defaults to `cosmos`. */
  cosmosPrefix?: string | undefined;
}

/**
 * Derives the address of a wallet of `type` from its public key. Throws an `Error` on an unknown type, a
 * key of the wrong format for the type (for example an ed25519 key for EVM), or a `cosmosPrefix` that is
 * invalid or given for a type other than COSMOS.
 */
export function deriveAddress({ type, publicKeyHex, cosmosPrefix }: DeriveAddressInput): string {
  if (cosmosPrefix !== undefined && type !== 'COSMOS') {
    throw new Error(`cosmosPrefix applies only to COSMOS wallets, not ${String(type)}`);
  }
  if (!Object.hasOwn(walletFamilies, type)) throw new Error(`Unknown wallet type: ${String(type)}`);
  return walletFamilies[type].deriveAddress(publicKeyHex, cosmosPrefix);
}
