/**
 * What the policy engine adds to one signing request: `evaluatePolicies` with 20 active policies of 10 rules each (the
 * issue's budget: under 0.2 ms at p50), beside an empty function call and `JSON.parse` of the request's body measured
 * by the same harness in the same run (so that a busy machine slows all alike), and the fact extraction of each
 * family. Prints figures; asserts nothing.
 * Run: `node --import tsx test/bench/policy-eval.ts` (BENCH_N: timed calls per row, default 20000).
 * With `BENCH_ONLY=eval` (or `parse`, `empty`) it runs only that step N times, for an instruction count that a busy
 * machine does not disturb: bundle it (`npx esbuild test/bench/policy-eval.ts --bundle --platform=node --format=esm
 * --packages=external --outfile=dist/policy-eval.mjs`), run `valgrind --tool=callgrind node dist/policy-eval.mjs`
 * with BENCH_N=0 and BENCH_N=k, and divide the difference of the totals by k.
 *
 * The policies: every one matches the request (EVM, its chain, some naming the wallet), and the request is allowed,
 * which is the longest path: every deny rule is evaluated false, every boundary is checked, every hold evaluated.
 * The spend ledger is an in-memory Map here; the store's lookup is measured with the store.
 */
import os from 'node:os';
import { makeSignDoc, serializeSignDoc } from '@cosmjs/amino';
import { toBech32 } from '@cosmjs/encoding';
import { Transaction as SuiTransaction } from '@mysten/sui/transactions';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { ComputeBudgetProgram, Keypair, Transaction } from '@solana/web3.js';
import {
  Account,
  Asset,
  BASE_FEE,
  Networks,
  Operation,
  Keypair as StellarKeypair,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import { encodeFunctionData, erc20Abi } from 'viem';
import {
  type ActivePolicy,
  evaluatePolicies,
  type PolicyRequest,
  type SpendKey,
} from '../../actors/signing/policy/evaluate-policies.ts';
import { validatePolicy } from '../../actors/signing/policy/validate-policy.ts';
import { extractCosmosSignDocFacts } from '../../chains/cosmos/extract-cosmos-sign-doc-facts.ts';
import { extractEvmTransactionFacts } from '../../chains/evm/extract-evm-transaction-facts.ts';
import { type EvmTransactionInput, prepareEvmTransaction } from '../../chains/evm/prepare-evm-transaction.ts';
import { extractSolanaTransactionFacts } from '../../chains/solana/extract-solana-transaction-facts.ts';
import { prepareSolanaTransaction } from '../../chains/solana/prepare-solana-transaction.ts';
import { extractStellarTransactionFacts } from '../../chains/stellar/extract-stellar-transaction-facts.ts';
import { extractSuiTransactionFacts } from '../../chains/sui/extract-sui-transaction-facts.ts';

const N = Number(process.env['BENCH_N'] ?? 20_000);
const ONLY = process.env['BENCH_ONLY'];

const WALLET = '2f1d0a8e-58a1-4c1e-9d7e-1c2b3a4d5e6f';
const TOKEN = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';
const address = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;
const RECIPIENT = address(7);

/** Ten rules of the kinds partners write: caps, deny lists, allow lists, selectors, spend windows, holds. */
function rules(p: number) {
  return [
    {
      id: 'big-value',
      effect: 'deny',
      actions: ['sign_transaction', 'transfer'],
      conditions: [{ fact: 'tx.value', op: 'gt', value: '10000000000000000000' }],
    },
    {
      id: 'blocklist',
      effect: 'deny',
      actions: ['all'],
      conditions: [{ fact: 'to', op: 'in', value: Array.from({ length: 20 }, (_, i) => address(1000 + i)) }],
    },
    {
      id: 'daily-native',
      effect: 'deny',
      actions: ['sign_transaction', 'transfer'],
      conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: '5000000000000000000' }],
    },
    {
      id: 'daily-usdc',
      effect: 'deny',
      actions: ['sign_transaction', 'transfer'],
      conditions: [{ spend: { asset: TOKEN, window: '24h' }, op: 'gt', value: `${1_000_000_000 + p}` }],
    },
    {
      id: 'no-approve',
      effect: 'deny',
      actions: ['sign_transaction'],
      conditions: [{ fact: 'tx.selector', op: 'eq', value: '0x095ea7b3' }],
    },
    {
      id: 'destinations',
      effect: 'allow',
      actions: ['sign_transaction', 'transfer'],
      conditions: [{ fact: 'to', op: 'in', value: Array.from({ length: 50 }, (_, i) => address(i)) }],
    },
    {
      id: 'contracts',
      effect: 'allow',
      actions: ['sign_transaction'],
      conditions: [
        {
          all: [
            { fact: 'tx.to', op: 'eq', value: TOKEN },
            { fact: 'tx.selector', op: 'in', value: ['0xa9059cbb'] },
          ],
        },
      ],
    },
    {
      id: 'raw',
      effect: 'allow',
      actions: ['raw_signature'],
      conditions: [{ fact: 'wallet.id', op: 'in', value: [WALLET] }],
    },
    {
      id: 'large',
      effect: 'require_approval',
      actions: ['sign_transaction', 'transfer'],
      conditions: [
        {
          any: [
            { fact: 'value', op: 'gte', value: '500000000' },
            { not: { fact: 'asset', op: 'in', value: [TOKEN, 'native'] } },
          ],
        },
      ],
      approval: { stages: [{ role: 'approver', threshold: 2 }] },
    },
    {
      id: 'weekly-usdc',
      effect: 'require_approval',
      actions: ['sign_transaction', 'transfer'],
      conditions: [{ spend: { asset: TOKEN, window: '7d' }, op: 'gt', value: '5000000000' }],
    },
  ];
}

function policies(): ActivePolicy[] {
  return Array.from({ length: 20 }, (_, p) => {
    const checked = validatePolicy({
      name: `policy ${p}`,
      layer: 'guardrail',
      scope: {
        walletType: 'EVM',
        networks: ['eip155:1', 'eip155:8453'],
        ...(p % 4 === 0 ? { walletIds: [WALLET, 'other'] } : {}),
      },
      rules: rules(p),
    });
    if (!checked.valid) throw new Error(JSON.stringify(checked.errors));
    return { id: `pol_${p}`, version: 1, createdAt: 1_700_000_000_000 + p, document: checked.policy };
  });
}

const txInput = {
  chainId: 1,
  type: 2,
  nonce: 12,
  to: TOKEN,
  data: encodeFunctionData({
    abi: erc20Abi,
    functionName: 'transfer',
    args: [RECIPIENT as `0x${string}`, 250_000_000n],
  }),
  gasLimit: '65000',
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1000000000',
};
const body = JSON.stringify({ transaction: txInput });
const prepared = prepareEvmTransaction(txInput as EvmTransactionInput);
const chain = extractEvmTransactionFacts({ ...prepared.transaction, chainId: prepared.chainId });
const request: PolicyRequest = {
  wallet: { id: WALLET, type: 'EVM' },
  action: 'sign_transaction',
  rawSignature: false,
  chain,
  at: Date.UTC(2025, 5, 1, 12),
};
const counted = new Map<string, bigint>();
const ledger = (key: SpendKey) => counted.get(`${key.policyId}|${key.ruleId}|${key.windowStart}`) ?? 0n;
const active = policies();

const check = evaluatePolicies(active, request, ledger);
if (check.effect !== 'allow' || check.trace.policies.length !== 20) {
  throw new Error(`the benchmark request should be allowed by all 20 policies: ${JSON.stringify(check)}`);
}

/** Per-call times (ns) of `fn`, after a warm-up; and the mean of a run without per-call timers. */
function measure(fn: () => unknown): { p50: number; p99: number; mean: number } {
  for (let i = 0; i < Math.min(N, 5000); i++) fn();
  const times = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times[i] = Number(process.hrtime.bigint() - t0);
  }
  times.sort();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  const mean = Number(process.hrtime.bigint() - t0) / N;
  return { p50: times[Math.floor(N * 0.5)]!, p99: times[Math.floor(N * 0.99)]!, mean };
}

function row(name: string, fn: () => unknown): void {
  const { p50, p99, mean } = measure(fn);
  const us = (ns: number) => (ns / 1000).toFixed(2).padStart(10);
  console.log(name.padEnd(58), us(p50), us(p99), us(mean));
}

if (ONLY !== undefined) {
  // One step N times and nothing else, for an instruction count: run with BENCH_N=0 and BENCH_N=k and divide the
  // difference by k.
  const empty = () => undefined;
  const step: Record<string, () => unknown> = {
    eval: () => evaluatePolicies(active, request, ledger),
    parse: () => JSON.parse(body),
    empty: () => empty(),
  };
  const fn = step[ONLY];
  if (!fn) throw new Error(`BENCH_ONLY must be one of ${Object.keys(step).join(', ')}`);
  let last: unknown;
  for (let i = 0; i < N; i++) last = fn();
  if (last === null) console.log(last);
  process.exit(0);
}

const [load1] = os.loadavg();
console.log(`node ${process.version}, ${os.cpus().length} cores, load average ${load1!.toFixed(2)} (1 min), N=${N}`);
console.log('row'.padEnd(58), 'p50 µs'.padStart(10), 'p99 µs'.padStart(10), 'mean µs'.padStart(10));
let sink: unknown;
const empty = () => undefined;
row('empty function call (harness floor)', () => empty());
row(`JSON.parse of the sign-transaction body (${body.length} B)`, () => {
  sink = JSON.parse(body);
});
row('evaluatePolicies: 20 policies x 10 rules, allowed (warm)', () => evaluatePolicies(active, request, ledger));
const denied = { ...request, chain: { ...chain, facts: { ...chain.facts, to: address(1003) } } };
row('evaluatePolicies: same, denied by the first blocklist', () => evaluatePolicies(active, denied, ledger));
row('evaluatePolicies: cold (documents compiled each call)', () =>
  evaluatePolicies(
    active.map((p) => ({ ...p, document: structuredClone(p.document) })),
    request,
    ledger,
  ),
);
row('extract facts: EVM ERC-20 transfer (prepared)', () =>
  extractEvmTransactionFacts({ ...prepared.transaction, chainId: prepared.chainId }),
);

// The other families, on transactions their own libraries build.
const solWallet = Keypair.fromSeed(new Uint8Array(32).fill(1)).publicKey;
const mint = Keypair.fromSeed(new Uint8Array(32).fill(4)).publicKey;
const solRecipient = Keypair.fromSeed(new Uint8Array(32).fill(3)).publicKey;
const solTx = new Transaction({
  feePayer: solWallet,
  blockhash: 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W',
  lastValidBlockHeight: 1,
}).add(
  ComputeBudgetProgram.setComputeUnitLimit({ units: 600 }),
  ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1000 }),
  createTransferCheckedInstruction(
    getAssociatedTokenAddressSync(mint, solWallet),
    mint,
    getAssociatedTokenAddressSync(mint, solRecipient),
    solWallet,
    5n,
    6,
  ),
);
const { messageBytes } = prepareSolanaTransaction(
  Buffer.from(solTx.serialize({ requireAllSignatures: false, verifySignatures: false })).toString('base64'),
  solWallet.toBase58(),
);
row('extract facts: Solana SPL TransferChecked', () =>
  extractSolanaTransactionFacts(messageBytes, solWallet.toBase58(), 'SOLANA'),
);

const stellarWallet = StellarKeypair.fromRawEd25519Seed(Buffer.alloc(32, 21)).publicKey();
const stellarEnvelope = new TransactionBuilder(new Account(stellarWallet, '100'), {
  fee: BASE_FEE,
  networkPassphrase: Networks.PUBLIC,
})
  .addOperation(
    Operation.payment({
      destination: StellarKeypair.fromRawEd25519Seed(Buffer.alloc(32, 22)).publicKey(),
      asset: Asset.native(),
      amount: '12.5',
    }),
  )
  .setTimeout(300)
  .build()
  .toXDR();
row('extract facts: Stellar payment', () =>
  extractStellarTransactionFacts(stellarEnvelope, Networks.PUBLIC, stellarWallet),
);

const cosmosWallet = toBech32('cosmos', new Uint8Array(20).fill(1));
const signDoc = Buffer.from(
  serializeSignDoc(
    makeSignDoc(
      [
        {
          type: 'cosmos-sdk/MsgSend',
          value: {
            from_address: cosmosWallet,
            to_address: toBech32('cosmos', new Uint8Array(20).fill(2)),
            amount: [{ denom: 'uatom', amount: '10' }],
          },
        },
      ],
      { amount: [{ denom: 'uatom', amount: '500' }], gas: '200000' },
      'cosmoshub-4',
      '',
      7,
      3,
    ),
  ),
).toString('utf8');
row('extract facts: Cosmos MsgSend sign doc', () => extractCosmosSignDocFacts(signDoc, cosmosWallet));

const suiWallet = `0x${'a0'.repeat(32)}`;
const suiTx = new SuiTransaction();
suiTx.setSender(suiWallet);
suiTx.setGasPrice(1000);
suiTx.setGasBudget(5_000_000);
suiTx.setGasPayment([
  { objectId: `0x${'11'.repeat(32)}`, version: '5', digest: '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi' },
]);
const [coin] = suiTx.splitCoins(suiTx.gas, [123n]);
suiTx.transferObjects([coin!], `0x${'22'.repeat(32)}`);
const suiBytes = await suiTx.build();
row('extract facts: Sui SplitCoins(GasCoin) payment', () => extractSuiTransactionFacts(suiBytes, suiWallet));
if (sink === null) console.log();
console.log(`load average after: ${os.loadavg()[0]!.toFixed(2)}`);
