import { ComputeBudgetInstruction, ComputeBudgetProgram, Transaction } from '@solana/web3.js';

/**
 * The compute-unit price (micro-lamports) a legacy transaction the service built bids: its ComputeBudget
 * `SetComputeUnitPrice` instruction's, 0 when it has none (the runtime's default). `transaction` is base64 wire bytes,
 * signed or not. A rebuilt attempt of an auto-retry transfer raises the price of the attempt it follows from this.
 */
export function readComputeUnitPrice(transaction: string): number {
  const tx = Transaction.from(Buffer.from(transaction, 'base64'));
  for (const ix of tx.instructions) {
    if (!ix.programId.equals(ComputeBudgetProgram.programId)) continue;
    if (ComputeBudgetInstruction.decodeInstructionType(ix) !== 'SetComputeUnitPrice') continue;
    const { microLamports } = ComputeBudgetInstruction.decodeSetComputeUnitPrice(ix);
    return Number(microLamports);
  }
  return 0;
}
