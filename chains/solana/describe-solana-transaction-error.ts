import { isPlainObject } from '../is-plain-object.ts';

/** "InsufficientFundsForFee" → "insufficient funds for fee". */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase();
}

function describeInstructionError(inner: unknown): string {
  if (typeof inner === 'string') return words(inner);
  if (isPlainObject(inner) && typeof inner['Custom'] === 'number') {
    return `custom program error 0x${inner['Custom'].toString(16)}`;
  }
  if (isPlainObject(inner)) {
    const [name] = Object.keys(inner);
    if (name !== undefined) return words(name);
  }
  return 'unknown error';
}

/**
 * A short, partner-safe text for a Solana `TransactionError` in its JSON form (`meta.err`, a signature status's
 * `err`, a simulation's `err`): `instruction 1 failed: custom program error 0x1`, `blockhash not found`, …
 * At most 200 characters; never throws.
 */
export function describeSolanaTransactionError(err: unknown): string {
  let text: string;
  if (typeof err === 'string') {
    text = words(err);
  } else if (isPlainObject(err) && Array.isArray(err['InstructionError'])) {
    const [index, inner] = err['InstructionError'] as [unknown, unknown];
    text = `instruction ${String(index)} failed: ${describeInstructionError(inner)}`;
  } else if (isPlainObject(err) && isPlainObject(err['InsufficientFundsForRent'])) {
    const index = (err['InsufficientFundsForRent'] as Record<string, unknown>)['account_index'];
    text = `account ${String(index)} would hold less than the rent-exempt minimum`;
  } else if (isPlainObject(err) && typeof err['DuplicateInstruction'] === 'number') {
    text = `instruction ${err['DuplicateInstruction']} is a duplicate`;
  } else if (isPlainObject(err) && Object.keys(err).length > 0) {
    text = words(Object.keys(err)[0]!);
  } else {
    text = 'unknown error';
  }
  return text.slice(0, 200);
}
