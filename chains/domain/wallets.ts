/**
 * The wallet vocabulary: types, key schemes, identifier kinds, statuses and custody. Part of the domain module
 * (chains/domain/), which imports nothing: every layer takes its lists from here.
 */

/** Wallet types the service creates. Fixed at creation. */
export const WALLET_TYPES = ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'] as const;
export type WalletType = (typeof WALLET_TYPES)[number];

/** Key schemes: `DKLS` is a secp256k1 key, `ED25519` an ed25519 key. */
export const SCHEMES = ['DKLS', 'ED25519'] as const;
export type Scheme = (typeof SCHEMES)[number];

export type Curve = 'secp256k1' | 'ed25519';

// Each type has exactly one scheme it can derive an address from, so the default is also the only one.
const SCHEME_OF_TYPE: Readonly<Record<WalletType, Scheme>> = {
  EVM: 'DKLS',
  COSMOS: 'DKLS',
  SOLANA: 'ED25519',
  STELLAR: 'ED25519',
  SUI: 'ED25519',
};

const CURVE_OF_SCHEME: Readonly<Record<Scheme, Curve>> = { DKLS: 'secp256k1', ED25519: 'ed25519' };

/** The scheme a wallet of `type` gets when the create request omits `scheme`. */
export function defaultScheme(type: WalletType): Scheme {
  const scheme = Object.hasOwn(SCHEME_OF_TYPE, type) ? SCHEME_OF_TYPE[type] : undefined;
  if (scheme === undefined) throw new Error(`Unknown wallet type: ${String(type)}`);
  return scheme;
}

/**
 * Whether a wallet of `type` can use `scheme`: EVM and COSMOS only DKLS; SOLANA, STELLAR and SUI only
 * ED25519 (an EVM address cannot be derived from an ed25519 key, so that pair must be refused).
 */
export function isSchemeSupported(type: WalletType, scheme: Scheme): boolean {
  return Object.hasOwn(SCHEME_OF_TYPE, type) && SCHEME_OF_TYPE[type] === scheme;
}

/** The curve of a scheme's keys. */
export function schemeCurve(scheme: Scheme): Curve {
  const curve = Object.hasOwn(CURVE_OF_SCHEME, scheme) ? CURVE_OF_SCHEME[scheme] : undefined;
  if (curve === undefined) throw new Error(`Unknown scheme: ${String(scheme)}`);
  return curve;
}

/** Kinds of the partner's user identifier. */
export const USER_IDENTIFIER_TYPES = ['CUSTOM_ID', 'EMAIL', 'PHONE'] as const;
export type UserIdentifierType = (typeof USER_IDENTIFIER_TYPES)[number];

/** A wallet's status: `creating` until its key exists and its shares are stored, then `ready`. */
export const WALLET_STATUSES = ['creating', 'ready'] as const;
export type WalletStatus = (typeof WALLET_STATUSES)[number];

/**
 * Who holds a wallet's shares: `managed`, both in the enclave (created through `/v1/wallets`); `pregen`, only the
 * service share (the legacy pre-generated flow, until `migrate-share` brings the user share in).
 */
export const CUSTODY_KINDS = ['managed', 'pregen'] as const;
export type Custody = (typeof CUSTODY_KINDS)[number];
