const QUANTITY = /^0x(?:0|[1-9a-fA-F][0-9a-fA-F]*)$/;

/**
 * The base fee of the block after the newest one an `eth_feeHistory` answer covers (EIP-1559's fee history lists one
 * base fee more than it covers blocks: the next block's, which the node computes from the newest): what a transaction
 * sent now must at least offer per gas to be included next. Undefined when the answer does not carry one as a hex
 * quantity; the caller then falls back to the latest block's own base fee.
 */
export function nextBaseFeeFromHistory(history: unknown): bigint | undefined {
  if (typeof history !== 'object' || history === null) return undefined;
  const { baseFeePerGas, gasUsedRatio } = history as { baseFeePerGas?: unknown; gasUsedRatio?: unknown };
  if (!Array.isArray(baseFeePerGas) || !Array.isArray(gasUsedRatio)) return undefined;
  // One entry per block covered, plus the next block's: an answer without that extra entry does not name it.
  if (baseFeePerGas.length !== gasUsedRatio.length + 1) return undefined;
  const next = baseFeePerGas[baseFeePerGas.length - 1];
  return typeof next === 'string' && QUANTITY.test(next) && next.length <= 66 ? BigInt(next) : undefined;
}
