import {
  ACCOUNT_SIZE,
  ASSOCIATED_TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  ExtensionType,
  getAccountLen,
  getAccountTypeOfMintType,
  getAssociatedTokenAddressSync,
  getExtensionTypes,
  getTransferHook,
  type Mint,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  unpackAccount,
  unpackMint,
} from '@solana/spl-token';
import { ComputeBudgetProgram, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { ChainInputError } from '../chain-input-error.ts';
import { decodeBase64 } from '../decode-base64.ts';
import { InternalError } from '../domain/errors.ts';
import { type ChainEnvironment, isSolanaNetwork, type SolanaNetwork } from '../domain/payments.ts';
import { isPlainObject } from '../is-plain-object.ts';
import {
  ChainRpcError,
  type FeeEstimate,
  type ObserveItem,
  type ObserveRound,
  type PaymentChain,
  type RebuiltTransfer,
  type SolanaUnsignedPayment,
  type TransferIntent,
} from '../payment-chain.ts';
import type { PartnerTransaction } from '../payment-family.ts';
import { chooseComputeUnitPrice } from './choose-compute-unit-price.ts';
import { classifySolanaSendError } from './classify-solana-send-error.ts';
import {
  createSolanaRpc,
  type RoundTripCounter,
  rpcResult,
  type SolanaRpcCall,
  type SolanaRpcOutcome,
} from './create-solana-rpc.ts';
import { fitComputeUnitPrice } from './fit-compute-unit-price.ts';
import { createSolanaObserveMemory, observeSolanaSignatures } from './observe-solana-signatures.ts';
import { parseSolanaAddress } from './parse-solana-address.ts';
import { parseU64Amount } from './parse-u64-amount.ts';

export interface SolanaChainConfig {
  network: SolanaNetwork;
  rpcUrl: string;
  environment: ChainEnvironment;
  /** Per HTTP request (default 10 s). */
  timeoutMs?: number;
  /** Replaces the global fetch (recorded exchanges, tests). */
  fetchFn?: typeof fetch;
  /**
   * How long a signature must stay absent after its blockhash was seen expired at finalized commitment before it is
   * proven dropped (default 20 s): a node's status index can lag its blocks.
   */
  expiryProofAfterMs?: number;
}

const DEFAULT_EXPIRY_PROOF_AFTER_MS = 20_000;

/**
 * Compute-unit limits per transfer kind. A limit is charged as bid (price × limit), so it is set per kind rather
 * than at the 200,000 default: about twice what the kind costs on mainnet, well above what it costs on the façade.
 * - SOL: two ComputeBudget instructions and one System transfer, 150 units each.
 * - SPL to an existing account: one `transferChecked` (about 6,200 units on SPL Token before p-token, up to a
 *   few thousand more on Token-2022 with extensions such as transfer fees).
 * - SPL creating the recipient's account: plus the associated-token-account program's idempotent create, which
 *   cross-invokes the System and token programs (about 25,000 to 35,000 units on mainnet).
 */
const COMPUTE_UNIT_LIMIT = { native: 1_000, token: 30_000, tokenWithAccountCreation: 80_000 } as const;
const DEFAULT_TIMEOUT_MS = 10_000;
/** The transaction wire limit: what a signed transfer can be at most. */
const PACKET_DATA_SIZE = 1232;
/** Blockhash and accounts at confirmed commitment: fresher than finalized, and rarely on an abandoned fork. */
const READ_COMMITMENT = 'confirmed';

interface PreparedTransfer {
  transaction: Transaction;
  blockhash: string;
  lastValidBlockHeight: number;
  computeUnitLimit: number;
  computeUnitPrice: number;
  /** Data length of the recipient's associated token account when the transfer creates it. */
  createdAccountSize?: number;
  /** Base plus priority fee (lamports), when a ceiling was given: what the attempt costs at most. */
  fee?: bigint;
  /** What the wallet holds (read in the same batch, when asked): lamports, and of the token for an SPL transfer. */
  funds?: { lamports: bigint; token: bigint | null };
}

/** How a transfer's priority fee is chosen, beyond the market's price; and whether the wallet's funds are read. */
interface PrepareOptions {
  /** Base plus priority fee at most this (lamports): an auto-retry transfer's `maxExecutionFeeLamports`. */
  ceiling?: bigint;
  /** A rebuilt attempt: the previous attempt's compute-unit price, which it outbids (fitComputeUnitPrice). */
  raiseFrom?: number;
  withFunds?: boolean;
}

/**
 * The base fee alone is above an auto-retry transfer's ceiling: no attempt can fit it. Always caught here and turned
 * into the caller's answer (a ChainInputError at admission, a FEE_CEILING_REACHED stop for a rebuild); an internal
 * code should it ever escape.
 */
class FeeCeilingTooLow extends InternalError {
  constructor(readonly baseFee: bigint) {
    super('FEE_CEILING_TOO_LOW', `the base fee alone, ${baseFee} lamports, is above the fee ceiling`);
  }
}

interface EncodedAccount {
  data: Buffer;
  owner: PublicKey;
  lamports: number;
  executable: boolean;
}

const malformed = (method: string): ChainRpcError =>
  new ChainRpcError('transient', 'RPC_UNAVAILABLE', `the Solana RPC answered ${method} in an unexpected shape`);

const invalidToken = (message: string): ChainRpcError => new ChainRpcError('final', 'INVALID_TOKEN', message);

const resultOf = rpcResult;

function readBlockhash(outcome: SolanaRpcOutcome | undefined): { blockhash: string; lastValidBlockHeight: number } {
  const result = resultOf(outcome, 'getLatestBlockhash');
  const value = isPlainObject(result) ? result['value'] : undefined;
  if (
    !isPlainObject(value) ||
    typeof value['blockhash'] !== 'string' ||
    typeof value['lastValidBlockHeight'] !== 'number'
  ) {
    throw malformed('getLatestBlockhash');
  }
  return { blockhash: value['blockhash'], lastValidBlockHeight: value['lastValidBlockHeight'] };
}

function readAccounts(outcome: SolanaRpcOutcome | undefined, count: number): (EncodedAccount | null)[] {
  const result = resultOf(outcome, 'getMultipleAccounts');
  const value = isPlainObject(result) ? result['value'] : undefined;
  if (!Array.isArray(value) || value.length !== count) throw malformed('getMultipleAccounts');
  return value.map((account) => {
    if (account === null) return null;
    const data = isPlainObject(account) ? account['data'] : undefined;
    if (
      !isPlainObject(account) ||
      !Array.isArray(data) ||
      data[1] !== 'base64' ||
      typeof data[0] !== 'string' ||
      typeof account['owner'] !== 'string' ||
      typeof account['lamports'] !== 'number'
    ) {
      throw malformed('getMultipleAccounts');
    }
    let owner: PublicKey;
    try {
      owner = new PublicKey(account['owner']);
    } catch {
      throw malformed('getMultipleAccounts');
    }
    return {
      data: Buffer.from(data[0], 'base64'),
      owner,
      lamports: account['lamports'],
      executable: account['executable'] === true,
    };
  });
}

function readMint(mintAddress: PublicKey, account: EncodedAccount | null): { mint: Mint; programId: PublicKey } {
  const name = mintAddress.toBase58();
  if (account === null)
    throw invalidToken(`tokenAddress ${name} has no account on this network: it is not an SPL mint`);
  const programId = [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID].find((id) => id.equals(account.owner));
  if (programId === undefined) {
    throw invalidToken(`tokenAddress ${name} is not an SPL mint: its account belongs to another program`);
  }
  let mint: Mint;
  try {
    mint = unpackMint(mintAddress, account, programId);
  } catch {
    throw invalidToken(`tokenAddress ${name} is not an SPL mint: its account is a token account or not initialized`);
  }
  if (!mint.isInitialized) throw invalidToken(`tokenAddress ${name} is not an initialized SPL mint`);
  const extensions = getExtensionTypes(mint.tlvData);
  // A transfer-hook program needs extra accounts per mint, and a non-transferable mint refuses every transfer:
  // both would only fail at broadcast.
  const hook = getTransferHook(mint);
  if (hook !== null && !hook.programId.equals(PublicKey.default)) {
    throw invalidToken(`tokenAddress ${name} has a transfer hook, which transfers of this service do not support`);
  }
  if (extensions.includes(ExtensionType.NonTransferable)) {
    throw invalidToken(`tokenAddress ${name} is a non-transferable token`);
  }
  return { mint, programId };
}

/** The amount a token account holds (a wallet's source account of an SPL transfer). */
function readTokenAmount(address: PublicKey, account: EncodedAccount, programId: PublicKey): bigint {
  try {
    return unpackAccount(address, account, programId).amount;
  } catch {
    throw malformed('getMultipleAccounts');
  }
}

function parseIntent(from: unknown, intent: unknown) {
  const wallet = parseSolanaAddress(from, 'from');
  if (!isPlainObject(intent)) throw new ChainInputError('the transfer must be an object');
  const { kind } = intent;
  if (kind !== 'NATIVE' && kind !== 'SPL') {
    throw new ChainInputError(
      kind === 'ERC20'
        ? 'kind ERC20 is not a Solana transfer: use NATIVE or SPL'
        : 'kind must be NATIVE or SPL on Solana',
      'kind',
    );
  }
  const to = parseSolanaAddress(intent['to'], 'to');
  const amount = parseU64Amount(intent['value'], 'value');
  if (kind === 'NATIVE') {
    if (intent['tokenAddress'] !== undefined) {
      throw new ChainInputError('tokenAddress must be omitted for a NATIVE transfer', 'tokenAddress');
    }
    return { kind, wallet, to, amount } as const;
  }
  if (intent['tokenAddress'] === undefined) {
    throw new ChainInputError('tokenAddress (the SPL mint) is required for an SPL transfer', 'tokenAddress');
  }
  const mint = parseSolanaAddress(intent['tokenAddress'], 'tokenAddress');
  return { kind, wallet, to, amount, mint } as const;
}

/**
 * The Solana side of transfers for one network (`solana:SOLANA` or `solana:SOLANA_DEVNET`), over JSON-RPC with
 * @solana/web3.js 1.x transactions and @solana/spl-token instructions.
 *
 * Round trips: buildTransfer 1 (a batch: blockhash, accounts, prioritization fees), estimateFee 2, broadcast 1
 * (2 when a token instruction finds its source account missing), observe at most 4, isBlockhashValid 1.
 */
export function createSolanaChain(config: SolanaChainConfig): PaymentChain {
  if (!isSolanaNetwork(config.network)) {
    throw new Error(`Solana network must be SOLANA or SOLANA_DEVNET, got ${String(config.network)}`);
  }
  let url: URL;
  try {
    url = new URL(config.rpcUrl);
  } catch {
    throw new Error(`the RPC URL of ${config.network} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`the RPC URL of ${config.network} must be http or https`);
  }
  const rpc = createSolanaRpc({
    rpcUrl: config.rpcUrl,
    timeoutMs: config.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetchFn: config.fetchFn ?? fetch,
  });
  const observeMemory = createSolanaObserveMemory({
    proofAfterMs: config.expiryProofAfterMs ?? DEFAULT_EXPIRY_PROOF_AFTER_MS,
  });

  /**
   * The compute-unit price a transfer bids: the market's (chooseComputeUnitPrice), or within a ceiling
   * (fitComputeUnitPrice; throws FeeCeilingTooLow when nothing fits). Its most fee when a ceiling was given.
   */
  function price(
    feesOutcome: SolanaRpcOutcome | undefined,
    computeUnitLimit: number,
    opts: PrepareOptions,
  ): { computeUnitPrice: number; fee?: bigint } {
    const market = chooseComputeUnitPrice(resultOf(feesOutcome, 'getRecentPrioritizationFees'));
    if (opts.ceiling === undefined) return { computeUnitPrice: market };
    const fitted = fitComputeUnitPrice({
      market,
      computeUnitLimit,
      ceiling: opts.ceiling,
      ...(opts.raiseFrom === undefined ? {} : { raiseFrom: opts.raiseFrom }),
    });
    if (!fitted.fits) throw new FeeCeilingTooLow(fitted.baseFee);
    return { computeUnitPrice: fitted.computeUnitPrice, fee: fitted.baseFee + fitted.priorityFee };
  }

  const balanceCall = (wallet: PublicKey): SolanaRpcCall => ({
    method: 'getBalance',
    params: [wallet.toBase58(), { commitment: READ_COMMITMENT }],
  });

  function readBalance(outcome: SolanaRpcOutcome | undefined): bigint {
    const result = resultOf(outcome, 'getBalance');
    const value = isPlainObject(result) ? result['value'] : undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw malformed('getBalance');
    return BigInt(value);
  }

  async function prepare(
    from: string,
    intent: TransferIntent,
    counter?: RoundTripCounter,
    opts: PrepareOptions = {},
  ): Promise<PreparedTransfer> {
    const parsed = parseIntent(from, intent);
    const { wallet, to, amount } = parsed;
    const blockhashCall = { method: 'getLatestBlockhash', params: [{ commitment: READ_COMMITMENT }] };

    if (parsed.kind === 'NATIVE') {
      const [blockhashOutcome, feesOutcome, balanceOutcome] = await rpc.send(
        [
          blockhashCall,
          { method: 'getRecentPrioritizationFees', params: [[wallet.toBase58(), to.toBase58()]] },
          ...(opts.withFunds ? [balanceCall(wallet)] : []),
        ],
        counter,
      );
      const { blockhash, lastValidBlockHeight } = readBlockhash(blockhashOutcome);
      const computeUnitLimit = COMPUTE_UNIT_LIMIT.native;
      const { computeUnitPrice, fee } = price(feesOutcome, computeUnitLimit, opts);
      const transaction = new Transaction({ feePayer: wallet, blockhash, lastValidBlockHeight }).add(
        ComputeBudgetProgram.setComputeUnitLimit({ units: computeUnitLimit }),
        ComputeBudgetProgram.setComputeUnitPrice({ microLamports: computeUnitPrice }),
        SystemProgram.transfer({ fromPubkey: wallet, toPubkey: to, lamports: amount }),
      );
      return {
        transaction,
        blockhash,
        lastValidBlockHeight,
        computeUnitLimit,
        computeUnitPrice,
        ...(fee === undefined ? {} : { fee }),
        ...(opts.withFunds ? { funds: { lamports: readBalance(balanceOutcome), token: null } } : {}),
      };
    }

    // The mint's owner decides the token program, and the program is part of the associated token account's
    // derivation: both candidates are read in the same batch, so the whole preparation is one round trip.
    const { mint: mintAddress } = parsed;
    const programs = [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID];
    const sources = programs.map((id) => getAssociatedTokenAddressSync(mintAddress, wallet, true, id));
    const destinations = programs.map((id) => getAssociatedTokenAddressSync(mintAddress, to, true, id));
    // With the funds: the wallet's token accounts of both programs too, and its balance.
    const read = [mintAddress, to, ...destinations, ...(opts.withFunds ? sources : [])];
    const [blockhashOutcome, accountsOutcome, feesOutcome, balanceOutcome] = await rpc.send(
      [
        blockhashCall,
        {
          method: 'getMultipleAccounts',
          params: [read.map((key) => key.toBase58()), { encoding: 'base64', commitment: READ_COMMITMENT }],
        },
        {
          method: 'getRecentPrioritizationFees',
          params: [[wallet, ...sources, ...destinations].map((key) => key.toBase58())],
        },
        ...(opts.withFunds ? [balanceCall(wallet)] : []),
      ],
      counter,
    );
    const { blockhash, lastValidBlockHeight } = readBlockhash(blockhashOutcome);
    const accounts = readAccounts(accountsOutcome, read.length);
    const [mintAccount, toAccount] = accounts;
    const destinationAccounts = accounts.slice(2, 2 + destinations.length);
    const sourceAccounts = accounts.slice(2 + destinations.length);
    const { mint, programId } = readMint(mintAddress, mintAccount!);
    if (toAccount && programs.some((id) => id.equals(toAccount.owner))) {
      throw new ChainInputError(
        "to is a token account or mint, not a wallet: give the recipient's wallet address",
        'to',
      );
    }
    const programIndex = programs.findIndex((id) => id.equals(programId));
    const source = sources[programIndex]!;
    const destination = destinations[programIndex]!;
    const createsAccount = destinationAccounts[programIndex] === null;
    const computeUnitLimit = createsAccount ? COMPUTE_UNIT_LIMIT.tokenWithAccountCreation : COMPUTE_UNIT_LIMIT.token;
    const { computeUnitPrice, fee } = price(feesOutcome, computeUnitLimit, opts);
    const transaction = new Transaction({ feePayer: wallet, blockhash, lastValidBlockHeight }).add(
      ComputeBudgetProgram.setComputeUnitLimit({ units: computeUnitLimit }),
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: computeUnitPrice }),
    );
    if (createsAccount) {
      transaction.add(
        createAssociatedTokenAccountIdempotentInstruction(
          wallet,
          destination,
          to,
          mintAddress,
          programId,
          ASSOCIATED_TOKEN_PROGRAM_ID,
        ),
      );
    }
    transaction.add(
      createTransferCheckedInstruction(source, mintAddress, destination, wallet, amount, mint.decimals, [], programId),
    );
    const prepared: PreparedTransfer = {
      transaction,
      blockhash,
      lastValidBlockHeight,
      computeUnitLimit,
      computeUnitPrice,
      ...(fee === undefined ? {} : { fee }),
    };
    if (opts.withFunds) {
      const held = sourceAccounts[programIndex];
      prepared.funds = {
        lamports: readBalance(balanceOutcome),
        token: held ? readTokenAmount(source, held, programId) : 0n,
      };
    }
    if (createsAccount) {
      // Token-2022 associated accounts carry ImmutableOwner, plus the account side of the mint's extensions.
      const extensions = new Set(
        getExtensionTypes(mint.tlvData)
          .map(getAccountTypeOfMintType)
          .filter((type) => type !== ExtensionType.Uninitialized),
      );
      extensions.add(ExtensionType.ImmutableOwner);
      prepared.createdAccountSize = programId.equals(TOKEN_PROGRAM_ID) ? ACCOUNT_SIZE : getAccountLen([...extensions]);
    }
    return prepared;
  }

  function unsignedOf(prepared: PreparedTransfer): SolanaUnsignedPayment {
    const wire = prepared.transaction.serialize({ requireAllSignatures: false, verifySignatures: false });
    return {
      family: 'SOLANA',
      transaction: wire.toString('base64'),
      blockhash: prepared.blockhash,
      lastValidBlockHeight: prepared.lastValidBlockHeight,
      computeUnitPrice: prepared.computeUnitPrice,
      ...(prepared.fee === undefined ? {} : { fee: prepared.fee.toString() }),
    };
  }

  async function isBlockhashValid(blockhash: string): Promise<boolean> {
    let bytes: Uint8Array | undefined;
    try {
      bytes = typeof blockhash === 'string' && blockhash.length <= 44 ? bs58.decode(blockhash) : undefined;
    } catch {
      bytes = undefined;
    }
    if (bytes?.length !== 32) throw new ChainInputError('blockhash is not Base58 of 32 bytes', 'blockhash');
    const result = await rpc.call('isBlockhashValid', [blockhash, { commitment: 'processed' }]);
    const value = isPlainObject(result) ? result['value'] : undefined;
    if (typeof value !== 'boolean') throw malformed('isBlockhashValid');
    return value;
  }

  return {
    family: 'SOLANA',
    key: `solana:${config.network}`,
    environment: config.environment,

    async buildTransfer(from, intent, options): Promise<SolanaUnsignedPayment> {
      let prepared: PreparedTransfer;
      try {
        prepared = await prepare(
          from,
          intent,
          undefined,
          options?.feeCeiling === undefined ? {} : { ceiling: BigInt(options.feeCeiling) },
        );
      } catch (err) {
        if (!(err instanceof FeeCeilingTooLow)) throw err;
        throw new ChainInputError(
          `autoRetry.maxExecutionFeeLamports ${options!.feeCeiling} is below the base fee alone (${err.baseFee} lamports): no attempt can fit it`,
          'autoRetry.maxExecutionFeeLamports',
        );
      }
      return unsignedOf(prepared);
    },

    async rebuildTransfer(from, intent, terms): Promise<RebuiltTransfer> {
      let prepared: PreparedTransfer;
      try {
        prepared = await prepare(from, intent, undefined, {
          ceiling: BigInt(terms.ceiling),
          raiseFrom: terms.raiseFrom,
          withFunds: true,
        });
      } catch (err) {
        if (!(err instanceof FeeCeilingTooLow)) throw err;
        return {
          kind: 'stop',
          reason: 'FEE_CEILING_REACHED',
          message: `the base fee alone (${err.baseFee} lamports) is above the ceiling of ${terms.ceiling} lamports`,
        };
      }
      const fee = prepared.fee!;
      const { lamports, token } = prepared.funds!;
      const native = intent.kind === 'NATIVE' ? BigInt(intent.value) : 0n;
      if (lamports < native + fee) {
        return {
          kind: 'stop',
          reason: 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT',
          message: `the wallet holds ${lamports} lamports; the next attempt needs ${native + fee} (${native > 0n ? `${native} to send and ` : ''}${fee} in fees)`,
        };
      }
      if (token !== null && token < BigInt(intent.value)) {
        return {
          kind: 'stop',
          reason: 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT',
          message: `the wallet holds ${token} of the token; the transfer sends ${intent.value}`,
        };
      }
      return { kind: 'rebuilt', unsigned: unsignedOf(prepared) };
    },

    async estimateFee(from, intent): Promise<FeeEstimate> {
      const prepared = await prepare(from, intent);
      const message = prepared.transaction.compileMessage();
      const calls: SolanaRpcCall[] = [
        {
          method: 'getFeeForMessage',
          params: [message.serialize().toString('base64'), { commitment: READ_COMMITMENT }],
        },
      ];
      if (prepared.createdAccountSize !== undefined) {
        calls.push({ method: 'getMinimumBalanceForRentExemption', params: [prepared.createdAccountSize] });
      }
      const [feeOutcome, rentOutcome] = await rpc.send(calls);
      const feeResult = resultOf(feeOutcome, 'getFeeForMessage');
      const fee = isPlainObject(feeResult) ? feeResult['value'] : undefined;
      if (fee === null) {
        throw new ChainRpcError(
          'transient',
          'RPC_UNAVAILABLE',
          'the Solana RPC could not price the transfer: it does not know the blockhash it just gave',
        );
      }
      if (typeof fee !== 'number' || !Number.isSafeInteger(fee) || fee < 0) throw malformed('getFeeForMessage');
      let rent = 0;
      if (rentOutcome !== undefined) {
        const value = resultOf(rentOutcome, 'getMinimumBalanceForRentExemption');
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
          throw malformed('getMinimumBalanceForRentExemption');
        }
        rent = value;
      }
      const priorityFee =
        (BigInt(prepared.computeUnitLimit) * BigInt(prepared.computeUnitPrice) + 999_999n) / 1_000_000n;
      // getFeeForMessage prices the whole message, priority included (Agave); the signature part is the rest.
      const baseFee = BigInt(fee) >= priorityFee ? BigInt(fee) - priorityFee : BigInt(fee);
      return {
        family: 'SOLANA',
        network: config.network,
        baseFee: baseFee.toString(),
        computeUnitLimit: String(prepared.computeUnitLimit),
        computeUnitPriceMicroLamports: String(prepared.computeUnitPrice),
        priorityFee: priorityFee.toString(),
        accountCreationRent: String(rent),
        totalFee: (baseFee + priorityFee).toString(),
      };
    },

    async broadcast(signedTransaction): Promise<void> {
      const wire = decodeBase64(signedTransaction, 'signedTransaction', PACKET_DATA_SIZE);
      const [outcome] = await rpc.send([
        {
          method: 'sendTransaction',
          // Preflight at the commitment the blockhash was read at: a finalized bank does not know it yet.
          params: [signedTransaction, { encoding: 'base64', preflightCommitment: READ_COMMITMENT }],
        },
      ]);
      if (outcome!.ok) {
        if (typeof outcome!.result !== 'string') throw malformed('sendTransaction');
        return;
      }
      const verdict = classifySolanaSendError(outcome!.error, wire);
      if (verdict.kind === 'accepted') return;
      if (verdict.kind === 'failed') throw verdict.error;
      let sourceMissing = false;
      try {
        const result = await rpc.call('getAccountInfo', [
          verdict.source,
          { encoding: 'base64', commitment: 'processed', dataSlice: { offset: 0, length: 0 } },
        ]);
        sourceMissing = isPlainObject(result) && result['value'] === null;
      } catch {
        // The simulation's verdict stands without the detail.
      }
      if (sourceMissing) {
        throw new ChainRpcError(
          'final',
          'INSUFFICIENT_TOKEN_BALANCE',
          'the wallet holds none of the token (it has no token account for this mint)',
          { cause: verdict.error.cause },
        );
      }
      throw verdict.error;
    },

    observe(items: readonly ObserveItem[]): Promise<ObserveRound> {
      return observeSolanaSignatures(rpc, items, observeMemory);
    },

    async checkPartnerTransaction(transaction: PartnerTransaction): Promise<void> {
      const blockhash = transaction.recentBlockhash;
      if (blockhash === null || !(await isBlockhashValid(blockhash))) {
        throw new ChainInputError(
          `network is ${config.network} but the transaction's blockhash is not valid on ${config.network}: it was built for another network, or its blockhash expired (build it again with a fresh one)`,
          'network',
        );
      }
    },

    isBlockhashValid,
  };
}
