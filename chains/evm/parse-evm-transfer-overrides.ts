/**
 * The EVM fields a transfer body may fix, named as `sign-transaction` names them (the spec leaves the transfer's
 * unnamed): `type`, `nonce`, `gasLimit`, `maxFeePerGas`, `maxPriorityFeePerGas`, `gasPrice`. What is given is kept as
 * given; what is missing the chain fills (fees from the node, the gas limit estimated with its 20% buffer, the nonce
 * the wallet's next one). A given nonce must be that next one: the payment service checks it against the node.
 */
import { ChainInputError } from '../chain-input-error.ts';

/** The fee and gas fields of a transfer, checked (integer strings); `type` as given or implied by the fee fields. */
export interface EvmTransferOverrides {
  type?: 0 | 2;
  gasLimit?: string;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  gasPrice?: string;
}

/** The body fields, as they arrive (the route's schema checked their JSON types). */
export interface EvmTransferOverrideFields {
  type?: unknown;
  nonce?: unknown;
  gasLimit?: unknown;
  maxFeePerGas?: unknown;
  maxPriorityFeePerGas?: unknown;
  gasPrice?: unknown;
}

export const EVM_OVERRIDE_FIELDS = [
  'type',
  'nonce',
  'gasLimit',
  'maxFeePerGas',
  'maxPriorityFeePerGas',
  'gasPrice',
] as const;

const INTEGER = /^(0|[1-9][0-9]*)$/;
const MAX_UINT256 = (1n << 256n) - 1n;
/** A gas limit no chain's block approaches; above it a transfer is a typo. */
const MAX_GAS_LIMIT = 1n << 63n;
/** The intrinsic gas of a plain value transfer: nothing below it can execute. */
const MIN_GAS_LIMIT = 21_000n;

function integerField(v: unknown, field: string, min: bigint, max: bigint): bigint {
  if (typeof v !== 'string' || !INTEGER.test(v) || v.length > 78) {
    throw new ChainInputError(`${field} must be a decimal integer string`, field);
  }
  const n = BigInt(v);
  if (n < min || n > max) throw new ChainInputError(`${field} must be from ${min} to ${max}, got ${v}`, field);
  return n;
}

/** Checks the override fields of an EVM transfer body: the fees and gas to keep, and the nonce asked for. */
export function parseEvmTransferOverrides(body: EvmTransferOverrideFields): {
  overrides: EvmTransferOverrides;
  nonce: number | null;
} {
  const overrides: EvmTransferOverrides = {};
  let nonce: number | null = null;
  if (body.nonce !== undefined) {
    if (typeof body.nonce !== 'number' || !Number.isSafeInteger(body.nonce) || body.nonce < 0) {
      throw new ChainInputError('nonce must be a non-negative integer', 'nonce');
    }
    nonce = body.nonce;
  }
  if (body.type !== undefined && body.type !== 0 && body.type !== 2) {
    throw new ChainInputError('type must be 0 (legacy, gasPrice) or 2 (EIP-1559, maxFeePerGas)', 'type');
  }
  if (body.gasLimit !== undefined) {
    overrides.gasLimit = integerField(body.gasLimit, 'gasLimit', MIN_GAS_LIMIT, MAX_GAS_LIMIT).toString();
  }
  const maxFee =
    body.maxFeePerGas === undefined ? undefined : integerField(body.maxFeePerGas, 'maxFeePerGas', 1n, MAX_UINT256);
  const tip =
    body.maxPriorityFeePerGas === undefined
      ? undefined
      : integerField(body.maxPriorityFeePerGas, 'maxPriorityFeePerGas', 0n, MAX_UINT256);
  const gasPrice = body.gasPrice === undefined ? undefined : integerField(body.gasPrice, 'gasPrice', 1n, MAX_UINT256);
  const dynamic = maxFee !== undefined || tip !== undefined;
  const type = (body.type as 0 | 2 | undefined) ?? (gasPrice !== undefined ? 0 : dynamic ? 2 : undefined);
  if (type === 0 && dynamic) {
    throw new ChainInputError(
      'a type 0 transfer takes gasPrice, not maxFeePerGas or maxPriorityFeePerGas',
      maxFee !== undefined ? 'maxFeePerGas' : 'maxPriorityFeePerGas',
    );
  }
  if (type === 2 && gasPrice !== undefined) {
    throw new ChainInputError(
      'a type 2 transfer takes maxFeePerGas and maxPriorityFeePerGas, not gasPrice',
      'gasPrice',
    );
  }
  if (maxFee !== undefined && tip !== undefined && tip > maxFee) {
    throw new ChainInputError(
      `maxPriorityFeePerGas (${tip}) must not exceed maxFeePerGas (${maxFee})`,
      'maxPriorityFeePerGas',
    );
  }
  if (type !== undefined) overrides.type = type;
  if (maxFee !== undefined) overrides.maxFeePerGas = maxFee.toString();
  if (tip !== undefined) overrides.maxPriorityFeePerGas = tip.toString();
  if (gasPrice !== undefined) overrides.gasPrice = gasPrice.toString();
  return { overrides, nonce };
}

/** Whether the fees are complete as given: then no fee is asked of the node (nor its fee history). */
export function feesComplete(o: EvmTransferOverrides): boolean {
  return o.type === 0
    ? o.gasPrice !== undefined
    : o.type === 2 && o.maxFeePerGas !== undefined && o.maxPriorityFeePerGas !== undefined;
}
