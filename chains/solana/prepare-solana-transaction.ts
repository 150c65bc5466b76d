import { PublicKey, type VersionedMessage, VersionedMessage as VersionedMessageCodec } from '@solana/web3.js';
import { ChainInputError } from '../chain-input-error.ts';
import { decodeBase64 } from '../decode-base64.ts';
import { describeError } from '../describe-error.ts';
import { describeType } from '../describe-type.ts';
import { decodeShortVec } from './decode-short-vec.ts';

/** A partner's Solana transaction checked for signing by one wallet. */
export interface PreparedSolanaTransaction {
  version: 'legacy' | 0;
  /** The message exactly as the input carries it: what the wallet signs. */
  messageBytes: Uint8Array;
  /** The wallet's slot among the message's required signers (and in the signature array). */
  signerIndex: number;
  /** The input bytes. */
  wire: Uint8Array;
}

/** Largest transaction a Solana packet carries (1280-byte IPv6 MTU minus 48 bytes of headers). */
const PACKET_DATA_SIZE = 1232;
const SIGNATURE_BYTES = 64;
const VERSION_1_PREFIX = 0x81;

function unsupportedVersion(version: number): ChainInputError {
  return new ChainInputError(
    `transaction is a version ${version} transaction; only legacy and v0 transactions are supported`,
    'transaction',
  );
}

/**
 * Checks a base64 serialized Solana transaction, legacy or v0 (auto-detected), for signing by the wallet at
 * `signerAddress` (Base58), which must be one of its required signers. The input must be exactly one canonical
 * transaction of at most 1232 bytes whose signature count matches its header. Other signers' signatures are
 * kept. Throws a `ChainInputError` with field `transaction` (or `signerAddress`).
 */
export function prepareSolanaTransaction(base64: string, signerAddress: string): PreparedSolanaTransaction {
  const wire = decodeBase64(base64, 'transaction', PACKET_DATA_SIZE);
  if (typeof signerAddress !== 'string') {
    throw new ChainInputError(
      `signerAddress must be a Base58 string, got ${describeType(signerAddress)}`,
      'signerAddress',
    );
  }
  let signer: PublicKey;
  try {
    // Base58 of 32 bytes is at most 44 characters; longer strings are not decoded at all.
    if (signerAddress.length > 44) throw new RangeError('too long');
    signer = new PublicKey(signerAddress);
  } catch {
    throw new ChainInputError('signerAddress is not a Solana address (Base58 of 32 bytes)', 'signerAddress');
  }

  // A v1 transaction (which @solana/web3.js 1.99 can read) puts its message first, so it opens with the message
  // prefix 0x81 where legacy and v0 put a signature count, which 1232 bytes keep below 0x80.
  if (wire[0] === VERSION_1_PREFIX) throw unsupportedVersion(1);
  // Legacy and v0 wire format: compact-u16 signature count ‖ count × 64-byte signatures ‖ message.
  const count = decodeShortVec(wire, 0);
  if (count === undefined) {
    throw new ChainInputError('transaction does not start with a valid signature count', 'transaction');
  }
  const messageStart = count.length + count.value * SIGNATURE_BYTES;
  if (messageStart >= wire.length) {
    throw new ChainInputError('transaction is truncated: it ends before its message', 'transaction');
  }
  const messageBytes = wire.slice(messageStart);
  // The top bit of the first message byte marks a versioned message, whose version is in the other 7 bits.
  const prefix = messageBytes[0]!;
  if (prefix & 0x80 && prefix !== 0x80) throw unsupportedVersion(prefix & 0x7f);
  let message: VersionedMessage;
  try {
    message = VersionedMessageCodec.deserialize(messageBytes);
  } catch (error) {
    throw new ChainInputError(`transaction is not a valid Solana transaction: ${describeError(error)}`, 'transaction');
  }
  if (message.version !== 'legacy' && message.version !== 0) throw unsupportedVersion(message.version);
  let reserialized: Uint8Array;
  try {
    reserialized = message.serialize();
  } catch (error) {
    throw new ChainInputError(`transaction is not a valid Solana transaction: ${describeError(error)}`, 'transaction');
  }
  if (Buffer.compare(reserialized, messageBytes) !== 0) {
    throw new ChainInputError('transaction has trailing bytes or a non-canonical encoding', 'transaction');
  }

  const { numRequiredSignatures } = message.header;
  if (count.value !== numRequiredSignatures) {
    throw new ChainInputError(
      `transaction carries ${count.value} signature slots but its message requires ${numRequiredSignatures}`,
      'transaction',
    );
  }
  const keys = message.staticAccountKeys;
  if (numRequiredSignatures > keys.length) {
    throw new ChainInputError('transaction requires more signers than it lists accounts', 'transaction');
  }
  const seen = new Set<string>();
  for (const key of keys) {
    const address = key.toBase58();
    if (seen.has(address))
      throw new ChainInputError(`transaction lists account ${address} more than once`, 'transaction');
    seen.add(address);
  }
  // Solana: the first numRequiredSignatures static account keys sign, in the order of the signature slots.
  const signerIndex = keys.slice(0, numRequiredSignatures).findIndex((key) => key.equals(signer));
  if (signerIndex === -1) {
    throw new ChainInputError(
      `the wallet ${signer.toBase58()} is not a required signer of this transaction`,
      'transaction',
    );
  }
  return { version: message.version, messageBytes, signerIndex, wire };
}
