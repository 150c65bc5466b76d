import {
  ASSOCIATED_TOKEN_PROGRAM_ID,
  decodeTransferCheckedInstruction,
  decodeTransferInstruction,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  TokenInstruction,
} from '@solana/spl-token';
import {
  ComputeBudgetProgram,
  type PublicKey,
  SystemInstruction,
  SystemProgram,
  TransactionInstruction,
  VersionedMessage,
} from '@solana/web3.js';
import type { SolanaNetwork } from '../domain/payments.ts';
import { ANY_NETWORK, type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';
import { solanaPolicyNetwork } from './solana-policy-network.ts';

/** SPL Memo (v2 and v1): records text, moves nothing. */
const MEMO_PROGRAMS: ReadonlySet<string> = new Set([
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
]);
const TOKEN_PROGRAMS = [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID];
/** Associated Token Account program: `Create` (empty data or 0) and `CreateIdempotent` (1). */
const ATA_CREATE = 0;
const ATA_CREATE_IDEMPOTENT = 1;

interface Transfer {
  /** `native`, the mint, or undefined for an SPL `Transfer` whose mint the transaction does not name. */
  asset: string | undefined;
  /** The recipient's wallet, or undefined for an SPL destination account whose owner the transaction does not name. */
  to: string | undefined;
  /** SPL: the destination token account. */
  account?: string;
  amount: bigint;
}

/** What an instruction the wallet signs does, as far as the policy engine is concerned; null: unknown. */
type Reading =
  | { kind: 'neutral' }
  | { kind: 'transfer'; transfer: Transfer }
  | { kind: 'account'; account: string; owner: string; mint: string };

function readInstruction(instruction: TransactionInstruction, wallet: PublicKey): Reading | null {
  const program = instruction.programId;
  if (program.equals(ComputeBudgetProgram.programId) || MEMO_PROGRAMS.has(program.toBase58())) {
    return { kind: 'neutral' };
  }
  if (program.equals(SystemProgram.programId)) {
    const type = SystemInstruction.decodeInstructionType(instruction);
    if (type === 'AdvanceNonceAccount') return { kind: 'neutral' };
    if (type !== 'Transfer') return null;
    const { fromPubkey, toPubkey, lamports } = SystemInstruction.decodeTransfer(instruction);
    if (!fromPubkey.equals(wallet)) return null;
    return { kind: 'transfer', transfer: { asset: NATIVE_ASSET, to: toPubkey.toBase58(), amount: BigInt(lamports) } };
  }
  const tokenProgram = TOKEN_PROGRAMS.find((id) => id.equals(program));
  if (tokenProgram) {
    if (instruction.data[0] === TokenInstruction.TransferChecked) {
      const { keys, data } = decodeTransferCheckedInstruction(instruction, tokenProgram);
      if (!keys.owner.pubkey.equals(wallet)) return null;
      const account = keys.destination.pubkey.toBase58();
      return {
        kind: 'transfer',
        transfer: { asset: keys.mint.pubkey.toBase58(), to: undefined, account, amount: data.amount },
      };
    }
    if (instruction.data[0] === TokenInstruction.Transfer) {
      const { keys, data } = decodeTransferInstruction(instruction, tokenProgram);
      if (!keys.owner.pubkey.equals(wallet)) return null;
      const account = keys.destination.pubkey.toBase58();
      return { kind: 'transfer', transfer: { asset: undefined, to: undefined, account, amount: data.amount } };
    }
    return null;
  }
  if (program.equals(ASSOCIATED_TOKEN_PROGRAM_ID)) {
    const variant = instruction.data.length === 0 ? ATA_CREATE : instruction.data[0];
    if (instruction.data.length > 1 || (variant !== ATA_CREATE && variant !== ATA_CREATE_IDEMPOTENT)) return null;
    // Accounts: payer, associated account, owner, mint, system program, token program. The program checks that the
    // account is the owner's associated account for the mint, or the transaction fails.
    const [, account, owner, mint] = instruction.keys;
    if (!account || !owner || !mint) return null;
    return {
      kind: 'account',
      account: account.pubkey.toBase58(),
      owner: owner.pubkey.toBase58(),
      mint: mint.pubkey.toBase58(),
    };
  }
  return null;
}

/**
 * The policy facts of a Solana transaction (legacy or v0) that the wallet at `walletAddress` signs, from its message
 * bytes (`prepareSolanaTransaction`'s `messageBytes`). `network` is the request's (`solana:mainnet`, `solana:devnet`);
 * a transaction signed without one could be for any network and matches every selector.
 *
 * The message is read instruction by instruction: ComputeBudget, Memo and a durable nonce's advance move nothing;
 * creating an associated token account names its owner and mint (its rent, like the fee, is not counted); a System
 * `Transfer` and an SPL `Transfer` / `TransferChecked` (Token or Token-2022) from the wallet move value. Anything else
 * (another program, another instruction, a transfer from another account, an account behind an address lookup table)
 * leaves the spend unknown and the transaction without payment facts. Exactly one transfer gives `to` (the System
 * recipient; for SPL, the owner of the destination when the transaction creates that account, else none), `value`
 * and `asset` (`native`, or the mint when the instruction or the account creation names it).
 */
export function extractSolanaTransactionFacts(
  messageBytes: Uint8Array,
  walletAddress: string,
  network: SolanaNetwork | null,
): ChainFacts {
  const selector = network === null ? ANY_NETWORK : solanaPolicyNetwork(network);
  const unknown: ChainFacts = { network: selector, facts: {}, spend: { moved: [], complete: false } };
  let message: VersionedMessage;
  try {
    message = VersionedMessage.deserialize(messageBytes);
  } catch {
    return unknown;
  }
  const keys = message.staticAccountKeys;
  const wallet = keys.find((key) => key.toBase58() === walletAddress);
  if (!wallet) return unknown;
  const transfers: Transfer[] = [];
  const accounts = new Map<string, { owner: string; mint: string } | null>();
  for (const compiled of message.compiledInstructions) {
    const programId = keys[compiled.programIdIndex];
    // An account loaded from a lookup table cannot be read without the chain.
    if (!programId || compiled.accountKeyIndexes.some((index) => index >= keys.length)) return unknown;
    const instruction = new TransactionInstruction({
      programId,
      keys: compiled.accountKeyIndexes.map((index) => ({
        pubkey: keys[index]!,
        isSigner: message.isAccountSigner(index),
        isWritable: message.isAccountWritable(index),
      })),
      data: Buffer.from(compiled.data),
    });
    let reading: Reading | null;
    try {
      reading = readInstruction(instruction, wallet);
    } catch {
      reading = null;
    }
    if (reading === null) return unknown;
    if (reading.kind === 'transfer') transfers.push(reading.transfer);
    if (reading.kind === 'account') {
      const known = accounts.get(reading.account);
      const same =
        known !== undefined && known !== null && known.owner === reading.owner && known.mint === reading.mint;
      // Two creations of one account that disagree: the transaction fails; name neither.
      accounts.set(reading.account, known === undefined || same ? { owner: reading.owner, mint: reading.mint } : null);
    }
  }

  for (const transfer of transfers) {
    if (transfer.account === undefined) continue;
    const created = accounts.get(transfer.account);
    if (!created) continue;
    transfer.to = created.owner;
    transfer.asset ??= created.mint;
  }
  const totals = new Map<string, bigint>([[NATIVE_ASSET, 0n]]);
  let complete = true;
  for (const { asset, amount } of transfers) {
    if (asset === undefined) complete = false;
    else totals.set(asset, (totals.get(asset) ?? 0n) + amount);
  }
  const moved = [...totals].map(([asset, amount]) => ({ asset, amount: amount.toString() }));
  const facts: ChainFacts['facts'] = {};
  const only = transfers.length === 1 ? transfers[0]! : undefined;
  if (only) {
    facts.value = only.amount.toString();
    if (only.to !== undefined) facts.to = only.to;
    if (only.asset !== undefined) facts.asset = only.asset;
  }
  return { network: selector, facts, spend: { moved, complete } };
}
