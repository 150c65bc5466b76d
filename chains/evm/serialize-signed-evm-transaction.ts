import { bytesToHex } from '@noble/hashes/utils.js';
import { serializeTransaction } from 'viem';
import { assertSecp256k1Signature } from '../assert-secp256k1-signature.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { describeError } from '../describe-error.ts';
import { isPlainObject } from '../is-plain-object.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import type { PreparedEvmTransaction } from './prepare-evm-transaction.ts';

/**
 * Serializes a prepared transaction with the enclave's signature of its digest, as `0x`-prefixed hex ready
 * for `eth_sendRawTransaction`. Type 2 carries yParity = recovery; legacy carries the EIP-155
 * v = chainId × 2 + 35 + recovery. Does not check whose key signed: recover the sender to confirm it.
 * Throws a `ChainInputError` for a malformed signature or prepared transaction.
 */
export function serializeSignedEvmTransaction(prepared: PreparedEvmTransaction, sig: Secp256k1Signature): string {
  if (!isPlainObject(prepared) || !isPlainObject(prepared.transaction)) {
    throw new ChainInputError('prepared must be the result of prepareEvmTransaction');
  }
  assertSecp256k1Signature(sig);
  const r = `0x${bytesToHex(sig.rs.subarray(0, 32))}` as const;
  const s = `0x${bytesToHex(sig.rs.subarray(32))}` as const;
  try {
    // viem derives the EIP-155 v of a legacy transaction from v = 27 + recovery and its chainId.
    return serializeTransaction(prepared.transaction, { r, s, yParity: sig.recovery, v: 27n + BigInt(sig.recovery) });
  } catch (error) {
    throw new ChainInputError(`transaction cannot be serialized: ${describeError(error)}`);
  }
}
