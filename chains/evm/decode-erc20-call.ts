import { decodeFunctionData, erc20Abi, type Hex } from 'viem';

/** An ERC-20 call the policy engine reads: a `transfer` (what it moves) or an `approve` (which moves nothing). */
export type Erc20Call = { kind: 'transfer'; to: string; amount: bigint } | { kind: 'approve' };

const CALLS = erc20Abi.filter(
  (item) => item.type === 'function' && (item.name === 'transfer' || item.name === 'approve'),
);
/** selector ‖ address word ‖ uint256 word. */
const CALL_HEX_LENGTH = 2 + 2 * (4 + 32 + 32);
/** An ABI address word: twelve zero bytes, then the address. */
const ADDRESS_WORD = /^0{24}[0-9a-f]{40}$/;

/**
 * Reads calldata as ERC-20 `transfer(address,uint256)` or `approve(address,uint256)`, strictly: exactly the
 * selector and two words, the address word with clean high bytes. Anything else (other functions, trailing bytes,
 * dirty padding) is null: the service does not guess what such calldata does. `data`: lowercase 0x-prefixed hex.
 */
export function decodeErc20Call(data: string): Erc20Call | null {
  const hex = data.toLowerCase();
  if (hex.length !== CALL_HEX_LENGTH || !ADDRESS_WORD.test(hex.slice(10, 74))) return null;
  let decoded: ReturnType<typeof decodeFunctionData<typeof CALLS>>;
  try {
    decoded = decodeFunctionData({ abi: CALLS, data: hex as Hex });
  } catch {
    return null;
  }
  if (decoded.functionName === 'approve') return { kind: 'approve' };
  const [to, amount] = decoded.args;
  return { kind: 'transfer', to: to.toLowerCase(), amount };
}
