import { ChainInputError } from './chain-input-error.ts';
import { describeType } from './describe-type.ts';

/**
 * Checks that `value` is a `Uint8Array` (a Buffer is one) of exactly `length` bytes; throws a
 * `ChainInputError` naming `field` otherwise.
 */
export function assertBytes(value: unknown, length: number, field: string): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new ChainInputError(`${field} must be ${length} bytes, got ${describeType(value)}`, field);
  }
  if (value.length !== length) {
    throw new ChainInputError(`${field} must be ${length} bytes, got ${value.length}`, field);
  }
}
