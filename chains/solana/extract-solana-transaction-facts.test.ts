import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createBurnInstruction,
  createTransferCheckedInstruction,
  createTransferInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
} from '@solana/spl-token';
import {
  AddressLookupTableAccount,
  ComputeBudgetProgram,
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { ANY_NETWORK } from '../domain/policies.ts';
import { extractSolanaTransactionFacts } from './extract-solana-transaction-facts.ts';
import { extractSolanaTransferFacts } from './extract-solana-transfer-facts.ts';
import { prepareSolanaTransaction } from './prepare-solana-transaction.ts';

const wallet = Keypair.fromSeed(new Uint8Array(32).fill(1)).publicKey;
const other = Keypair.fromSeed(new Uint8Array(32).fill(2)).publicKey;
const recipient = Keypair.fromSeed(new Uint8Array(32).fill(3)).publicKey;
const mint = Keypair.fromSeed(new Uint8Array(32).fill(4)).publicKey;
const BLOCKHASH = 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W';
const FOREIGN_PROGRAM = Keypair.fromSeed(new Uint8Array(32).fill(9)).publicKey;
const sourceAccount = getAssociatedTokenAddressSync(mint, wallet);
const recipientAccount = getAssociatedTokenAddressSync(mint, recipient);

const budget = [
  ComputeBudgetProgram.setComputeUnitLimit({ units: 600 }),
  ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1000 }),
];
const sol = (lamports: number | bigint, from: PublicKey = wallet) =>
  SystemProgram.transfer({ fromPubkey: from, toPubkey: recipient, lamports });

/** A legacy transaction as a partner sends it, through the route's own check; the facts of its message. */
function legacy(instructions: TransactionInstruction[], network: 'SOLANA' | 'SOLANA_DEVNET' | null = 'SOLANA') {
  const tx = new Transaction({ feePayer: wallet, blockhash: BLOCKHASH, lastValidBlockHeight: 1 }).add(...instructions);
  const wire = tx.serialize({ requireAllSignatures: false, verifySignatures: false });
  const { messageBytes } = prepareSolanaTransaction(Buffer.from(wire).toString('base64'), wallet.toBase58());
  return extractSolanaTransactionFacts(messageBytes, wallet.toBase58(), network);
}

function v0(instructions: TransactionInstruction[], tables: AddressLookupTableAccount[] = []) {
  const message = new TransactionMessage({
    payerKey: wallet,
    recentBlockhash: BLOCKHASH,
    instructions,
  }).compileToV0Message(tables);
  const wire = new VersionedTransaction(message).serialize();
  const { messageBytes } = prepareSolanaTransaction(Buffer.from(wire).toString('base64'), wallet.toBase58());
  return extractSolanaTransactionFacts(messageBytes, wallet.toBase58(), 'SOLANA_DEVNET');
}

const unknown = (network: string) => ({ network, facts: {}, spend: { moved: [], complete: false } });

describe('extractSolanaTransactionFacts', () => {
  it('reads a SOL transfer beside compute-budget instructions, as the service builds them', () => {
    const read = legacy([...budget, sol(5000)]);
    assert.deepEqual(read, {
      network: 'solana:mainnet',
      facts: { value: '5000', to: recipient.toBase58(), asset: 'native' },
      spend: { moved: [{ asset: 'native', amount: '5000' }], complete: true },
    });
    assert.deepEqual(
      read,
      extractSolanaTransferFacts('SOLANA', { kind: 'NATIVE', to: recipient.toBase58(), value: '5000' }),
    );
  });

  it('reads v0 transactions the same way, and a memo as moving nothing', () => {
    const memo = new TransactionInstruction({
      programId: new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'),
      keys: [{ pubkey: wallet, isSigner: true, isWritable: false }],
      data: Buffer.from('invoice 42'),
    });
    assert.deepEqual(v0([...budget, memo, sol(7n)]).facts, { value: '7', to: recipient.toBase58(), asset: 'native' });
  });

  it('reads an SPL TransferChecked with the account creation the service adds: the recipient wallet, mint and amount', () => {
    const read = legacy([
      ...budget,
      createAssociatedTokenAccountIdempotentInstruction(wallet, recipientAccount, recipient, mint),
      createTransferCheckedInstruction(sourceAccount, mint, recipientAccount, wallet, 1_500_000n, 6),
    ]);
    assert.deepEqual(read, {
      network: 'solana:mainnet',
      facts: { value: '1500000', to: recipient.toBase58(), asset: mint.toBase58() },
      spend: {
        moved: [
          { asset: 'native', amount: '0' },
          { asset: mint.toBase58(), amount: '1500000' },
        ],
        complete: true,
      },
    });
    assert.deepEqual(
      read,
      extractSolanaTransferFacts('SOLANA', {
        kind: 'SPL',
        to: recipient.toBase58(),
        value: '1500000',
        tokenAddress: mint.toBase58(),
      }),
    );
  });

  it('names no recipient for a token transfer to an account the transaction does not create (Token-2022 too)', () => {
    const destination = getAssociatedTokenAddressSync(mint, recipient, false, TOKEN_2022_PROGRAM_ID);
    const source = getAssociatedTokenAddressSync(mint, wallet, false, TOKEN_2022_PROGRAM_ID);
    const read = legacy([
      createTransferCheckedInstruction(source, mint, destination, wallet, 9n, 0, [], TOKEN_2022_PROGRAM_ID),
    ]);
    assert.deepEqual(read.facts, { value: '9', asset: mint.toBase58() });
    assert.equal(read.spend.complete, true);
  });

  it('knows the mint of a plain SPL Transfer only from an account creation', () => {
    const bare = legacy([createTransferInstruction(sourceAccount, recipientAccount, wallet, 10n)]);
    assert.deepEqual(bare.facts, { value: '10' });
    assert.deepEqual(bare.spend, { moved: [{ asset: 'native', amount: '0' }], complete: false });
    const created = legacy([
      createAssociatedTokenAccountIdempotentInstruction(wallet, recipientAccount, recipient, mint),
      createTransferInstruction(sourceAccount, recipientAccount, wallet, 10n),
    ]);
    assert.deepEqual(created.facts, { value: '10', to: recipient.toBase58(), asset: mint.toBase58() });
    assert.equal(created.spend.complete, true);
  });

  it('sums several transfers without naming a payment', () => {
    const read = legacy([
      sol(1),
      sol(2),
      createTransferCheckedInstruction(sourceAccount, mint, recipientAccount, wallet, 3n, 0),
    ]);
    assert.deepEqual(read.facts, {});
    assert.deepEqual(read.spend, {
      moved: [
        { asset: 'native', amount: '3' },
        { asset: mint.toBase58(), amount: '3' },
      ],
      complete: true,
    });
  });

  it('knows nothing of a transaction with another program, another instruction or a transfer from another account', () => {
    const foreign = {
      programId: FOREIGN_PROGRAM,
      keys: [{ pubkey: wallet, isSigner: true, isWritable: true }],
      data: Buffer.from([1]),
    };
    assert.deepEqual(legacy([sol(1), foreign as TransactionInstruction]), unknown('solana:mainnet'));
    assert.deepEqual(legacy([createBurnInstruction(sourceAccount, mint, wallet, 1n)]), unknown('solana:mainnet'));
    assert.deepEqual(legacy([sol(1), sol(1, other)]), unknown('solana:mainnet'));
    assert.deepEqual(
      legacy([
        SystemProgram.createAccount({
          fromPubkey: wallet,
          newAccountPubkey: other,
          lamports: 5,
          space: 0,
          programId: FOREIGN_PROGRAM,
        }),
      ]),
      unknown('solana:mainnet'),
    );
  });

  it('knows nothing when an account comes from an address lookup table', () => {
    const table = new AddressLookupTableAccount({
      key: Keypair.fromSeed(new Uint8Array(32).fill(7)).publicKey,
      state: {
        deactivationSlot: 2n ** 64n - 1n,
        lastExtendedSlot: 0,
        lastExtendedSlotStartIndex: 0,
        addresses: [recipient],
      },
    });
    assert.deepEqual(v0([sol(1)], [table]), unknown('solana:devnet'));
  });

  it('matches every selector when the request names no network, and reads bytes that are no message as nothing', () => {
    assert.equal(legacy([sol(1)], null).network, ANY_NETWORK);
    assert.equal(legacy([sol(1)], 'SOLANA_DEVNET').network, 'solana:devnet');
    assert.deepEqual(
      extractSolanaTransactionFacts(Uint8Array.of(1, 2, 3), wallet.toBase58(), 'SOLANA'),
      unknown('solana:mainnet'),
    );
  });
});
