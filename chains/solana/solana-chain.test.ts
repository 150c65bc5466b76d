import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ASSOCIATED_TOKEN_PROGRAM_ID,
  createTransferCheckedInstruction,
  decodeTransferCheckedInstruction,
  getAccount,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import {
  ComputeBudgetInstruction,
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SystemInstruction,
  SystemProgram,
  Transaction,
} from '@solana/web3.js';
import bs58 from 'bs58';
import {
  airdrop,
  createTestMint,
  type FacadeControl,
  facadeControl,
  mintTokens,
  waitForSignature,
} from '../../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../../fixtures/solana-facade.ts';
import { ChainInputError } from '../chain-input-error.ts';
import {
  ChainRpcError,
  type Observation,
  type ObserveItem,
  type PaymentChain,
  type SolanaUnsignedPayment,
  type TransferIntent,
} from '../payment-chain.ts';
import { MAX_COMPUTE_UNIT_PRICE } from './choose-compute-unit-price.ts';
import { prepareSolanaTransaction } from './prepare-solana-transaction.ts';
import { createSolanaChain } from './solana-chain.ts';

/** The wallet's signature, as the enclave will give it: here a web3.js Keypair signs in the test. */
function sign(payment: SolanaUnsignedPayment, wallet: Keypair): { signed: string; hash: string } {
  const tx = Transaction.from(Buffer.from(payment.transaction, 'base64'));
  tx.partialSign(wallet);
  return { signed: tx.serialize().toString('base64'), hash: bs58.encode(tx.signature!) };
}

const itemOf = (payment: SolanaUnsignedPayment, hash: string, wallet: Keypair): ObserveItem => ({
  hash,
  from: wallet.publicKey.toBase58(),
  blockhash: payment.blockhash,
  lastValidBlockHeight: payment.lastValidBlockHeight,
});

const randomSignature = (): string => bs58.encode(randomBytes(64));
const address = (): string => Keypair.generate().publicKey.toBase58();

async function rpcError(promise: Promise<unknown>, kind: 'transient' | 'final', code: string): Promise<ChainRpcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ChainRpcError, `expected a ChainRpcError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.transient ? 'transient' : 'final', kind);
    return error;
  }
  assert.fail(`expected ${code}`);
}

describe('Solana chain against the façade', () => {
  let facade: SolanaFacade;
  let connection: Connection;
  let control: FacadeControl;
  let chain: PaymentChain;
  let wallet: Keypair;
  let mintAuthority: Keypair;

  async function buildSol(from: Keypair, to: string, value: string): Promise<SolanaUnsignedPayment> {
    return (await chain.buildTransfer(from.publicKey.toBase58(), {
      kind: 'NATIVE',
      to,
      value,
    })) as SolanaUnsignedPayment;
  }

  async function observeOne(item: ObserveItem): Promise<Observation | undefined> {
    return (await chain.observe([item])).observations.get(item.hash);
  }

  async function untilFinal(item: ObserveItem): Promise<Observation> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const observation = await observeOne(item);
      if (observation?.status === 'included' && observation.final) return observation;
      if (Date.now() > deadline) assert.fail(`${item.hash} was not finalized: ${JSON.stringify(observation)}`);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  }

  async function withPausedSlots<T>(work: () => Promise<T>): Promise<T> {
    await control.pauseSlots();
    try {
      return await work();
    } finally {
      await control.resumeSlots();
    }
  }

  before(async () => {
    facade = await startSolanaFacade();
    connection = new Connection(facade.rpcUrl, 'confirmed');
    control = facadeControl(facade.rpcUrl);
    chain = createSolanaChain({
      network: 'SOLANA_DEVNET',
      rpcUrl: facade.rpcUrl,
      environment: 'development',
      expiryProofAfterMs: 0,
    });
    wallet = Keypair.generate();
    mintAuthority = Keypair.generate();
    await airdrop(connection, wallet.publicKey, 5 * LAMPORTS_PER_SOL);
    await airdrop(connection, mintAuthority.publicKey, 5 * LAMPORTS_PER_SOL);
  });

  after(async () => {
    await facade.stop();
  });

  it('identifies itself', () => {
    assert.equal(chain.family, 'SOLANA');
    assert.equal(chain.key, 'solana:SOLANA_DEVNET');
    assert.equal(chain.environment, 'development');
    assert.equal(chain.pendingNonce, undefined);
  });

  it('builds, broadcasts and observes a SOL transfer: included, then final', async () => {
    const recipient = address();
    const payment = await buildSol(wallet, recipient, '1234567');
    assert.equal(payment.family, 'SOLANA');
    const tx = Transaction.from(Buffer.from(payment.transaction, 'base64'));
    assert.ok(tx.feePayer?.equals(wallet.publicKey));
    assert.equal(tx.recentBlockhash, payment.blockhash);
    assert.deepEqual(
      tx.signatures.map((entry) => entry.signature),
      [null],
    );
    assert.deepEqual(
      tx.instructions.map((ix) => ix.programId.toBase58()),
      [ComputeBudgetProgram.programId, ComputeBudgetProgram.programId, SystemProgram.programId].map(String),
    );
    assert.equal(ComputeBudgetInstruction.decodeSetComputeUnitLimit(tx.instructions[0]!).units, 1_000);
    const transfer = SystemInstruction.decodeTransfer(tx.instructions[2]!);
    assert.equal(transfer.toPubkey.toBase58(), recipient);
    assert.equal(transfer.lamports, 1_234_567n);
    // The service's signing path takes it as is: the wallet signs in slot 0.
    assert.equal(prepareSolanaTransaction(payment.transaction, wallet.publicKey.toBase58()).signerIndex, 0);
    // The blockhash is the confirmed block's (one behind the newest), valid 150 blocks after it.
    const { blockHeight } = await control.status();
    assert.ok(payment.lastValidBlockHeight - 150 <= blockHeight - 1);
    assert.ok(payment.lastValidBlockHeight - 150 > blockHeight - 20);
    assert.equal(await chain.isBlockhashValid!(payment.blockhash), true);

    const { signed, hash } = sign(payment, wallet);
    const item = itemOf(payment, hash, wallet);
    await withPausedSlots(async () => {
      await chain.broadcast(signed);
      const round = await chain.observe([item]);
      assert.equal(round.roundTrips, 1);
      const seen = round.observations.get(hash);
      assert.equal(seen?.status, 'included');
      assert.equal(seen.final, false);
      assert.equal(seen.success, true);
    });
    // Rebroadcasting the same bytes (after a restart, say) is accepted.
    await chain.broadcast(signed);
    const final = await untilFinal(item);
    assert.ok(final.status === 'included' && final.success);
    const landed = await connection.getTransaction(hash, { commitment: 'finalized' });
    assert.equal(final.blockNumber, String(landed?.slot));
    // The record shows the finalized slot's blockhash, as the node gives it for that slot.
    const block = (await (
      await fetch(facade.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: [landed?.slot, {}] }),
      })
    ).json()) as { result: { blockhash: string } };
    assert.equal(final.blockHash, block.result.blockhash);
    assert.equal(bs58.decode(final.blockHash ?? '').length, 32);
    assert.equal(await connection.getBalance(new PublicKey(recipient)), 1_234_567);
  });

  it('estimates a SOL fee that is what the transfer is charged, priority included', async () => {
    await control.setPrioritizationFee(5_000);
    try {
      const to = address();
      const intent: TransferIntent = { kind: 'NATIVE', to, value: '2000000' };
      const estimate = await chain.estimateFee(wallet.publicKey.toBase58(), intent);
      assert.deepEqual(estimate, {
        family: 'SOLANA',
        network: 'SOLANA_DEVNET',
        baseFee: '5000',
        computeUnitLimit: '1000',
        computeUnitPriceMicroLamports: '5000',
        priorityFee: '5',
        accountCreationRent: '0',
        totalFee: '5005',
      });
      const payment = await buildSol(wallet, to, '2000000');
      const { signed, hash } = sign(payment, wallet);
      const before = await connection.getBalance(wallet.publicKey);
      await chain.broadcast(signed);
      await untilFinal(itemOf(payment, hash, wallet));
      assert.equal(before - (await connection.getBalance(wallet.publicKey)), 2_000_000 + Number(estimate.totalFee));

      // A fee spike is capped.
      await control.setPrioritizationFee(50_000_000);
      const capped = await chain.estimateFee(wallet.publicKey.toBase58(), intent);
      assert.ok(capped.family === 'SOLANA');
      assert.equal(capped.computeUnitPriceMicroLamports, String(MAX_COMPUTE_UNIT_PRICE));
      assert.equal(capped.priorityFee, '1000');
    } finally {
      await control.setPrioritizationFee(0);
    }
  });

  for (const [label, programId, decimals] of [
    ['Token', TOKEN_PROGRAM_ID, 6],
    ['Token-2022', TOKEN_2022_PROGRAM_ID, 9],
  ] as const) {
    it(`sends ${label} tokens, creating the recipient's account the first time only`, async () => {
      const mint = await createTestMint(connection, mintAuthority, { decimals, programId });
      await mintTokens(connection, mintAuthority, mint, wallet.publicKey, 1_000_000n, programId);
      const recipient = Keypair.generate().publicKey;
      const recipientAccount = getAssociatedTokenAddressSync(mint, recipient, false, programId);
      const intent: TransferIntent = {
        kind: 'SPL',
        to: recipient.toBase58(),
        value: '250000',
        tokenAddress: mint.toBase58(),
      };
      const from = wallet.publicKey.toBase58();

      const estimate = await chain.estimateFee(from, intent);
      assert.ok(estimate.family === 'SOLANA');
      assert.equal(estimate.computeUnitLimit, '80000');

      const first = (await chain.buildTransfer(from, intent)) as SolanaUnsignedPayment;
      const firstTx = Transaction.from(Buffer.from(first.transaction, 'base64'));
      assert.deepEqual(
        firstTx.instructions.map((ix) => ix.programId.toBase58()),
        [ComputeBudgetProgram.programId, ComputeBudgetProgram.programId, ASSOCIATED_TOKEN_PROGRAM_ID, programId].map(
          String,
        ),
      );
      const decoded = decodeTransferCheckedInstruction(firstTx.instructions[3]!, programId);
      assert.equal(decoded.data.decimals, decimals);
      assert.equal(decoded.data.amount, 250_000n);
      assert.ok(decoded.keys.destination.pubkey.equals(recipientAccount));
      const one = sign(first, wallet);
      await chain.broadcast(one.signed);
      await untilFinal(itemOf(first, one.hash, wallet));
      assert.equal((await getAccount(connection, recipientAccount, 'confirmed', programId)).amount, 250_000n);
      const created = await connection.getAccountInfo(recipientAccount);
      assert.ok(created);
      assert.equal(
        estimate.accountCreationRent,
        String(await connection.getMinimumBalanceForRentExemption(created.data.length)),
      );
      assert.equal(created.lamports, Number(estimate.accountCreationRent));

      const again = await chain.estimateFee(from, intent);
      assert.ok(again.family === 'SOLANA');
      assert.equal(again.accountCreationRent, '0');
      assert.equal(again.computeUnitLimit, '30000');
      const second = (await chain.buildTransfer(from, intent)) as SolanaUnsignedPayment;
      const secondTx = Transaction.from(Buffer.from(second.transaction, 'base64'));
      assert.equal(secondTx.instructions.length, 3);
      const two = sign(second, wallet);
      await chain.broadcast(two.signed);
      await untilFinal(itemOf(second, two.hash, wallet));
      assert.equal((await getAccount(connection, recipientAccount, 'confirmed', programId)).amount, 500_000n);
      const source = getAssociatedTokenAddressSync(mint, wallet.publicKey, false, programId);
      assert.equal((await getAccount(connection, source, 'confirmed', programId)).amount, 500_000n);
    });
  }

  it('builds for an unfunded wallet; the broadcast fails with INSUFFICIENT_NATIVE_BALANCE', async () => {
    const unfunded = Keypair.generate();
    const payment = await buildSol(unfunded, address(), '1000');
    const error = await rpcError(
      chain.broadcast(sign(payment, unfunded).signed),
      'final',
      'INSUFFICIENT_NATIVE_BALANCE',
    );
    assert.doesNotMatch(error.message, /127\.0\.0\.1|http/);
    const mint = await createTestMint(connection, mintAuthority, { decimals: 0 });
    const spl = (await chain.buildTransfer(unfunded.publicKey.toBase58(), {
      kind: 'SPL',
      to: address(),
      value: '1',
      tokenAddress: mint.toBase58(),
    })) as SolanaUnsignedPayment;
    await rpcError(chain.broadcast(sign(spl, unfunded).signed), 'final', 'INSUFFICIENT_NATIVE_BALANCE');
  });

  it('classifies SOL shortfalls: too little for the value, and a recipient left below rent', async () => {
    const poor = Keypair.generate();
    await airdrop(connection, poor.publicKey, LAMPORTS_PER_SOL);
    const payment = await buildSol(poor, address(), String(2 * LAMPORTS_PER_SOL));
    await rpcError(chain.broadcast(sign(payment, poor).signed), 'final', 'INSUFFICIENT_NATIVE_BALANCE');
    const dust = await buildSol(poor, address(), '10');
    const error = await rpcError(chain.broadcast(sign(dust, poor).signed), 'final', 'EXECUTION_FAILED');
    assert.match(error.message, /rent-exempt minimum/);
  });

  it('fails a token transfer beyond the balance, or with no token account, with INSUFFICIENT_TOKEN_BALANCE', async () => {
    const mint = await createTestMint(connection, mintAuthority, { decimals: 2 });
    await mintTokens(connection, mintAuthority, mint, wallet.publicKey, 100n);
    const tooMuch = (await chain.buildTransfer(wallet.publicKey.toBase58(), {
      kind: 'SPL',
      to: address(),
      value: '101',
      tokenAddress: mint.toBase58(),
    })) as SolanaUnsignedPayment;
    await rpcError(chain.broadcast(sign(tooMuch, wallet).signed), 'final', 'INSUFFICIENT_TOKEN_BALANCE');

    for (const programId of [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID]) {
      const other = await createTestMint(connection, mintAuthority, { decimals: 2, programId });
      const none = (await chain.buildTransfer(wallet.publicKey.toBase58(), {
        kind: 'SPL',
        to: address(),
        value: '1',
        tokenAddress: other.toBase58(),
      })) as SolanaUnsignedPayment;
      const error = await rpcError(chain.broadcast(sign(none, wallet).signed), 'final', 'INSUFFICIENT_TOKEN_BALANCE');
      assert.match(error.message, /no token account/);
    }
  });

  it('builds within a fee ceiling: the price is bid down to fit, and a ceiling below the base fee is refused', async () => {
    await control.setPrioritizationFee(200_000);
    try {
      const from = wallet.publicKey.toBase58();
      const intent: TransferIntent = { kind: 'NATIVE', to: address(), value: '1000' };
      const free = (await chain.buildTransfer(from, intent)) as SolanaUnsignedPayment;
      assert.equal(free.computeUnitPrice, 200_000);
      assert.equal(free.fee, undefined);
      // 5,000 base + 10 lamports of priority over a native transfer's 1,000 units: at most 10,000 µ-lamports.
      const capped = (await chain.buildTransfer(from, intent, { feeCeiling: '5010' })) as SolanaUnsignedPayment;
      assert.equal(capped.computeUnitPrice, 10_000);
      assert.equal(capped.fee, '5010');
      const budget = ComputeBudgetInstruction.decodeSetComputeUnitPrice(
        Transaction.from(Buffer.from(capped.transaction, 'base64')).instructions[1]!,
      );
      assert.equal(budget.microLamports, 10_000n, 'the transaction bids what it reports');
      const roomy = (await chain.buildTransfer(from, intent, { feeCeiling: '1000000' })) as SolanaUnsignedPayment;
      assert.equal(roomy.computeUnitPrice, 200_000, 'the market price when it fits');
      await assert.rejects(
        chain.buildTransfer(from, intent, { feeCeiling: '4999' }),
        (e: unknown) => e instanceof ChainInputError && e.field === 'autoRetry.maxExecutionFeeLamports',
      );
    } finally {
      await control.setPrioritizationFee(0);
    }
  });

  it('rebuilds an attempt with a fresh blockhash and a raised price, or says why not (funds, ceiling)', async () => {
    const payer = Keypair.generate();
    await airdrop(connection, payer.publicKey, 10_000_000);
    const from = payer.publicKey.toBase58();
    const first = await buildSol(payer, address(), '1000000');
    await control.advanceSlots(3);
    const rebuilt = await chain.rebuildTransfer!(
      from,
      { kind: 'NATIVE', to: address(), value: '1000000' },
      {
        ceiling: '1000000',
        raiseFrom: 8_000,
      },
    );
    assert.equal(rebuilt.kind, 'rebuilt');
    if (rebuilt.kind !== 'rebuilt') return;
    assert.equal(rebuilt.unsigned.computeUnitPrice, 9_000, '8,000 × 1.125');
    assert.notEqual(rebuilt.unsigned.blockhash, first.blockhash);
    assert.ok(rebuilt.unsigned.lastValidBlockHeight > first.lastValidBlockHeight);
    // What it built lands as it is.
    const { signed, hash } = sign(rebuilt.unsigned, payer);
    await chain.broadcast(signed);
    await waitForSignature(connection, hash, 'confirmed');

    const short = await chain.rebuildTransfer!(
      from,
      { kind: 'NATIVE', to: address(), value: '9990000' },
      {
        ceiling: '1000000',
        raiseFrom: 0,
      },
    );
    assert.equal(short.kind, 'stop');
    assert.equal(short.kind === 'stop' && short.reason, 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
    assert.match(
      short.kind === 'stop' ? short.message : '',
      /holds \d+ lamports; the next attempt needs 9995000 \(9990000 to send and 5000 in fees\)/,
    );

    const mint = await createTestMint(connection, mintAuthority, { decimals: 0 });
    await mintTokens(connection, mintAuthority, mint, payer.publicKey, 5n);
    const token = (value: string) =>
      chain.rebuildTransfer!(
        from,
        { kind: 'SPL', to: address(), value, tokenAddress: mint.toBase58() },
        {
          ceiling: '1000000',
          raiseFrom: 0,
        },
      );
    assert.equal((await token('5')).kind, 'rebuilt');
    const tokenShort = await token('6');
    assert.equal(tokenShort.kind === 'stop' && tokenShort.reason, 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
    assert.match(tokenShort.kind === 'stop' ? tokenShort.message : '', /holds 5 of the token/);

    const over = await chain.rebuildTransfer!(
      from,
      { kind: 'NATIVE', to: address(), value: '1' },
      {
        ceiling: '4999',
        raiseFrom: 0,
      },
    );
    assert.equal(over.kind === 'stop' && over.reason, 'FEE_CEILING_REACHED');
  });

  it('refuses what is not a mint with INVALID_TOKEN, and a token account as recipient', async () => {
    const from = wallet.publicKey.toBase58();
    const spl = (tokenAddress: string, to = address()): TransferIntent => ({
      kind: 'SPL',
      to,
      value: '1',
      tokenAddress,
    });
    await rpcError(chain.buildTransfer(from, spl(address())), 'final', 'INVALID_TOKEN');
    await rpcError(chain.buildTransfer(from, spl(from)), 'final', 'INVALID_TOKEN');
    const mint = await createTestMint(connection, mintAuthority, { decimals: 0 });
    const tokenAccount = await mintTokens(connection, mintAuthority, mint, wallet.publicKey, 5n);
    await rpcError(chain.buildTransfer(from, spl(tokenAccount.toBase58())), 'final', 'INVALID_TOKEN');
    await rpcError(chain.estimateFee(from, spl(tokenAccount.toBase58())), 'final', 'INVALID_TOKEN');
    const soulbound = await createTestMint(connection, mintAuthority, {
      decimals: 0,
      programId: TOKEN_2022_PROGRAM_ID,
      nonTransferable: true,
    });
    const error = await rpcError(chain.buildTransfer(from, spl(soulbound.toBase58())), 'final', 'INVALID_TOKEN');
    assert.match(error.message, /non-transferable/);
    await assert.rejects(chain.buildTransfer(from, spl(mint.toBase58(), tokenAccount.toBase58())), (thrown) => {
      assert.ok(thrown instanceof ChainInputError);
      assert.equal(thrown.field, 'to');
      return true;
    });
  });

  it('observes a transaction that landed with an instruction error as included, success false', async () => {
    const mint = await createTestMint(connection, mintAuthority, { decimals: 0 });
    const source = await mintTokens(connection, mintAuthority, mint, wallet.publicKey, 1n);
    const recipient = Keypair.generate().publicKey;
    const destination = await mintTokens(connection, mintAuthority, mint, recipient, 0n);
    // The adapter's broadcast runs preflight, so a failing transfer only lands when someone skips it.
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash('confirmed');
    const tx = new Transaction({ feePayer: wallet.publicKey, blockhash, lastValidBlockHeight }).add(
      createTransferCheckedInstruction(source, mint, destination, wallet.publicKey, 2n, 0),
    );
    tx.sign(wallet);
    const hash = await connection.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    await waitForSignature(connection, hash, 'processed');
    const item = { hash, from: wallet.publicKey.toBase58(), blockhash, lastValidBlockHeight };
    const final = await untilFinal(item);
    assert.ok(final.status === 'included');
    assert.equal(final.success, false);
    assert.equal(final.error, 'instruction 0 failed: custom program error 0x1');
  });

  it('calls a dropped transaction expired only once its blockhash is dead at finalized commitment', async () => {
    await withPausedSlots(async () => {
      const payment = await buildSol(wallet, address(), '5000000');
      const { signed, hash } = sign(payment, wallet);
      await control.dropNextTransactions(1);
      await chain.broadcast(signed);
      const withHeight = itemOf(payment, hash, wallet);
      const withBlockhash: ObserveItem = { hash, from: withHeight.from, blockhash: payment.blockhash };
      let round = await chain.observe([withHeight]);
      assert.equal(round.observations.has(hash), false);
      assert.equal(round.roundTrips, 1);
      round = await chain.observe([withBlockhash]);
      assert.equal(round.observations.has(hash), false, 'a blockhash newer than the finalized block is not dead');
      assert.equal(round.roundTrips, 2);

      // The processing height passes the last valid height first: not proof yet.
      const status = await control.status();
      await control.advanceSlots(payment.lastValidBlockHeight - status.finalizedBlockHeight);
      assert.equal((await control.status()).finalizedBlockHeight, payment.lastValidBlockHeight);
      assert.equal(await chain.isBlockhashValid!(payment.blockhash), false);
      assert.equal((await chain.observe([withHeight])).observations.has(hash), false);
      assert.equal((await chain.observe([withBlockhash])).observations.has(hash), false);
      await rpcError(chain.broadcast(signed), 'final', 'BLOCKHASH_EXPIRED');

      await control.advanceSlots(1);
      round = await chain.observe([withHeight]);
      assert.deepEqual(round.observations.get(hash), { status: 'dropped', reason: 'expired' });
      assert.equal(round.roundTrips, 2);
      round = await chain.observe([withBlockhash]);
      assert.deepEqual(round.observations.get(hash), { status: 'dropped', reason: 'expired' });
      assert.equal(round.roundTrips, 3);
      // Without a blockhash or a height nothing proves it dead.
      round = await chain.observe([{ hash, from: withHeight.from }]);
      assert.equal(round.observations.has(hash), false);

      // A chain that wants the absence to last (a status index may lag the blocks): unknown until it has.
      const patient = createSolanaChain({
        network: 'SOLANA_DEVNET',
        rpcUrl: facade.rpcUrl,
        environment: 'development',
        expiryProofAfterMs: 300,
      });
      assert.equal((await patient.observe([withHeight])).observations.has(hash), false);
      await new Promise((res) => setTimeout(res, 150));
      assert.equal((await patient.observe([withHeight])).observations.has(hash), false);
      await new Promise((res) => setTimeout(res, 200));
      round = await patient.observe([withHeight]);
      assert.deepEqual(round.observations.get(hash), { status: 'dropped', reason: 'expired' });
    });
  });

  it('observes 50, 500 and 5,000 items in the same number of round trips, as many as it reports', async () => {
    let requests = 0;
    const counted = createSolanaChain({
      network: 'SOLANA_DEVNET',
      rpcUrl: facade.rpcUrl,
      environment: 'any',
      expiryProofAfterMs: 0,
      fetchFn: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const payment = await buildSol(wallet, address(), '7000000');
    const { signed, hash } = sign(payment, wallet);
    await chain.broadcast(signed);
    await waitForSignature(connection, hash, 'processed');
    const { finalizedBlockHeight } = await control.status();
    const from = wallet.publicKey.toBase58();
    const items = (count: number): ObserveItem[] => [
      itemOf(payment, hash, wallet),
      ...Array.from({ length: count - 1 }, (_, index) => ({
        hash: randomSignature(),
        from,
        // Every tenth one's blockhash died long ago; the others are still alive.
        lastValidBlockHeight: index % 10 === 0 ? finalizedBlockHeight - 500 : finalizedBlockHeight + 10_000,
      })),
    ];
    const trips: number[] = [];
    for (const count of [50, 500, 5_000]) {
      const before = requests;
      const round = await counted.observe(items(count));
      assert.equal(round.roundTrips, requests - before);
      trips.push(round.roundTrips);
      assert.equal(round.observations.get(hash)?.status, 'included');
      const dropped = [...round.observations.values()].filter((entry) => entry.status === 'dropped');
      assert.equal(dropped.length, Math.ceil((count - 1) / 10));
    }
    assert.deepEqual(trips, [2, 2, 2]);
    const before = requests;
    // None expired and none of them final (a final one adds its block's lookup to a second request).
    const quiet = await counted.observe(
      items(5_000)
        .slice(1)
        .map(({ lastValidBlockHeight: _, ...rest }) => rest),
    );
    assert.equal(quiet.roundTrips, 1);
    assert.equal(requests - before, 1);
  });

  it('reports an unreachable, rate-limited, failing or silent node as transient RPC_UNAVAILABLE', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    // The URL carries a provider key, as real ones do: no message may repeat it.
    const down = createSolanaChain({
      network: 'SOLANA',
      rpcUrl: `http://127.0.0.1:${port}/secret-api-key`,
      environment: 'any',
    });
    const from = wallet.publicKey.toBase58();
    const error = await rpcError(
      down.buildTransfer(from, { kind: 'NATIVE', to: address(), value: '1' }),
      'transient',
      'RPC_UNAVAILABLE',
    );
    assert.doesNotMatch(error.message, new RegExp(String(port)));
    assert.doesNotMatch(error.message, /secret-api-key/);
    await rpcError(
      down.estimateFee(from, { kind: 'NATIVE', to: address(), value: '1' }),
      'transient',
      'RPC_UNAVAILABLE',
    );
    const payment = await buildSol(wallet, address(), '1000');
    await rpcError(down.broadcast(sign(payment, wallet).signed), 'transient', 'RPC_UNAVAILABLE');
    await rpcError(down.observe([{ hash: randomSignature(), from }]), 'transient', 'RPC_UNAVAILABLE');
    await rpcError(down.isBlockhashValid!(payment.blockhash), 'transient', 'RPC_UNAVAILABLE');

    for (const status of [429, 503]) {
      await control.failNextHttp(1, status);
      const limited = await rpcError(chain.broadcast(sign(payment, wallet).signed), 'transient', 'RPC_UNAVAILABLE');
      assert.match(limited.message, new RegExp(String(status)));
    }
    await control.failNextHttp(1, 500);
    await rpcError(chain.observe([{ hash: randomSignature(), from }]), 'transient', 'RPC_UNAVAILABLE');

    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const slow = createSolanaChain({
        network: 'SOLANA',
        rpcUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        environment: 'any',
        timeoutMs: 200,
      });
      const timedOut = await rpcError(
        slow.observe([{ hash: randomSignature(), from }]),
        'transient',
        'RPC_UNAVAILABLE',
      );
      assert.match(timedOut.message, /200 ms/);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses bad input with a ChainInputError naming the field', async () => {
    const from = wallet.publicKey.toBase58();
    const mint = address();
    const cases: [unknown, string, string?][] = [
      [{ kind: 'NATIVE', to: 'not-an-address', value: '1' }, 'to'],
      // A digit appended to the largest 44-character key: 33 bytes (appended to a random key it can still decode to
      // 32 bytes, about once in a hundred keys).
      [{ kind: 'NATIVE', to: `${new PublicKey(Buffer.alloc(32, 0xff)).toBase58()}1`, value: '1' }, 'to'],
      [{ kind: 'NATIVE', to: '0x0000000000000000000000000000000000000001', value: '1' }, 'to'],
      [{ kind: 'NATIVE', to: 42, value: '1' }, 'to'],
      [{ kind: 'NATIVE', to: address(), value: '0' }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: '-1' }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: '1.5' }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: '01' }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: 1 }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: '18446744073709551616' }, 'value'],
      [{ kind: 'SPL', to: address(), value: '18446744073709551616', tokenAddress: mint }, 'value'],
      [{ kind: 'NATIVE', to: address(), value: '1', tokenAddress: mint }, 'tokenAddress'],
      [{ kind: 'SPL', to: address(), value: '1' }, 'tokenAddress'],
      [{ kind: 'SPL', to: address(), value: '1', tokenAddress: 'xyz' }, 'tokenAddress'],
      [{ kind: 'ERC20', to: address(), value: '1', tokenAddress: mint }, 'kind'],
      [{ kind: 'NATIVE', to: address(), value: '1' }, 'from', 'not-a-wallet'],
    ];
    for (const [intent, field, sender] of cases) {
      for (const call of [chain.buildTransfer, chain.estimateFee]) {
        await assert.rejects(call(sender ?? from, intent as TransferIntent), (error) => {
          assert.ok(error instanceof ChainInputError, `${JSON.stringify(intent)}: ${String(error)}`);
          assert.equal(error.field, field, JSON.stringify(intent));
          return true;
        });
      }
    }
    // The largest u64 is a valid amount (it fails later, for want of funds, not as input).
    const max = await buildSol(wallet, address(), '18446744073709551615');
    await rpcError(chain.broadcast(sign(max, wallet).signed), 'final', 'INSUFFICIENT_NATIVE_BALANCE');
    await assert.rejects(chain.isBlockhashValid!('nope'), ChainInputError);
    await assert.rejects(chain.broadcast('not base64!'), ChainInputError);
    assert.throws(
      () => createSolanaChain({ network: 'SOLANA_TESTNET' as 'SOLANA', rpcUrl: facade.rpcUrl, environment: 'any' }),
      /SOLANA or SOLANA_DEVNET/,
    );
  });
});
