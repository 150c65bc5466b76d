import { type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';
import { decodeErc20Call } from './decode-erc20-call.ts';

/**
 * The fields of a checked EVM transaction the policy engine reads: `prepareEvmTransaction`'s `transaction` with its
 * `chainId` (`{ ...prepared.transaction, chainId: prepared.chainId }`).
 */
export interface EvmTransactionFields {
  chainId: number;
  /** Absent (or null) for a contract creation. */
  to?: string | null | undefined;
  value?: bigint | undefined;
  data?: string | undefined;
}

/**
 * The policy facts of an EVM transaction (sign-transaction, a broadcast one, a payment's attempt): `network`
 * `eip155:<chainId>`; `tx.chainId`, `tx.to`, `tx.value` and `tx.selector` (the first four data bytes, `0x` for
 * none; absent for a contract creation, as is `tx.to`); and a payment's `to`, `value`, `asset` when the transaction
 * is exactly one: a native transfer (no data) or an ERC-20 `transfer(address,uint256)` carrying no native value.
 * Spend: the native value always counts; an ERC-20 `transfer` counts its amount of the token, an `approve` nothing;
 * the token amounts of any other call (or a creation) are unknown. Addresses are lower-case.
 */
export function extractEvmTransactionFacts(tx: EvmTransactionFields): ChainFacts {
  const chainId = String(tx.chainId);
  const value = tx.value ?? 0n;
  const data = (tx.data ?? '0x').toLowerCase();
  const native = { asset: NATIVE_ASSET, amount: value.toString() };
  const facts: ChainFacts['facts'] = { 'tx.chainId': chainId, 'tx.value': value.toString() };
  const network = `eip155:${chainId}`;
  if (tx.to === undefined || tx.to === null) {
    // A contract creation: its init code can do anything with what the wallet approved before.
    return { network, facts, spend: { moved: [native], complete: false } };
  }
  const to = tx.to.toLowerCase();
  facts['tx.to'] = to;
  facts['tx.selector'] = data.slice(0, 10);
  if (data === '0x') {
    return {
      network,
      facts: { ...facts, to, value: value.toString(), asset: NATIVE_ASSET },
      spend: { moved: [native], complete: true },
    };
  }
  const call = decodeErc20Call(data);
  if (call === null) return { network, facts, spend: { moved: [native], complete: false } };
  if (call.kind === 'approve') return { network, facts, spend: { moved: [native], complete: true } };
  const token = { asset: to, amount: call.amount.toString() };
  if (value !== 0n) {
    // Two payments (native value and tokens): counted, but no single payment to describe.
    return { network, facts, spend: { moved: [native, token], complete: true } };
  }
  return {
    network,
    facts: { ...facts, to: call.to, value: token.amount, asset: to },
    spend: { moved: [native, token], complete: true },
  };
}
