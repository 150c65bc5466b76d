const COSMOS_PREFIX = /^[a-z][a-z0-9]{0,19}$/;

/**
 * Whether `prefix` is an acceptable Bech32 prefix (HRP) for a Cosmos address: 1 to 20 characters,
 * lowercase ASCII letters and digits, starting with a letter (`cosmos`, `osmo`, `juno`, `celestia`, `sei`).
 * Bech32 itself allows up to 83 printable characters; this rule is narrower on purpose, so that a
 * partner's typo (uppercase, spaces, punctuation, a pasted address) is refused instead of minting
 * addresses under a prefix no chain uses.
 */
export function isValidCosmosPrefix(prefix: unknown): prefix is string {
  return typeof prefix === 'string' && COSMOS_PREFIX.test(prefix);
}
