import { cosmosSigner } from './cosmos/cosmos-signer.ts';
import type { WalletType } from './domain/wallets.ts';
import { evmSigner } from './evm/evm-signer.ts';
import { solanaSigner } from './solana/solana-signer.ts';
import { stellarSigner } from './stellar/stellar-signer.ts';
import { suiSigner } from './sui/sui-signer.ts';
import type { WalletFamily } from './wallet-family.ts';

/**
 * The signing adapter of each wallet type. A new chain is its folder, its type in WALLET_TYPES and a line here (and,
 * if it has pool steps, their line in api/chain-steps.ts, which a test checks).
 */
export const walletFamilies = {
  EVM: evmSigner,
  COSMOS: cosmosSigner,
  SOLANA: solanaSigner,
  STELLAR: stellarSigner,
  SUI: suiSigner,
} as const satisfies Readonly<Record<WalletType, Pick<WalletFamily, 'type'>>>;
