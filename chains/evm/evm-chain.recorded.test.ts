import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EvmRecording } from '../../fixtures/rpc/record-evm.ts';
import { type AnswerEdit, createReplayFetch, loadEvmRecording, recordedResult } from '../../fixtures/rpc/replay-evm.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { ChainRpcError, type EvmUnsignedPayment, type ObserveItem, type TransferIntent } from '../payment-chain.ts';
import { createEvmChain, type EvmChainConfig } from './evm-chain.ts';

// Replays of fixtures/rpc/evm-*.json (recorded from anvil by fixtures/rpc/record-evm.ts). Where a rule needs an
// answer anvil never gives (a zero tip, a broken fee history), the test edits that one answer, here, visibly.

const GWEI = 1_000_000_000n;

function replay(scenario: string, edit?: AnswerEdit, config: Partial<EvmChainConfig> = {}) {
  const recording = loadEvmRecording(scenario);
  const served = createReplayFetch(recording, edit);
  const chain = createEvmChain({
    chainId: recording.node.chainId,
    // Never contacted: every request goes to the replay.
    rpcUrl: 'http://replay.invalid:8545',
    environment: 'development',
    fetchFn: served.fetchFn,
    feeDataMaxAgeMs: 0,
    ...config,
  });
  const context = recording.context as {
    from: string;
    intent: TransferIntent;
    [key: string]: unknown;
  };
  return {
    recording,
    chain,
    context,
    requests: served.requests,
    /** Every call the chain made was answered from the recording or an edit. */
    assertAllAnswered() {
      assert.deepEqual(served.unanswered, [], 'calls the recording cannot answer');
    },
  };
}

function latestBaseFee(recording: EvmRecording): bigint {
  return BigInt((recordedResult(recording, 'eth_getBlockByNumber') as { baseFeePerGas: string }).baseFeePerGas);
}

/** Replaces the answer of every call of `method`. */
function answer(method: string, replacement: { result: unknown } | { error: { code: number; message: string } }) {
  return ((call) => (call.method === method ? replacement : undefined)) satisfies AnswerEdit;
}

async function rejection(promise: Promise<unknown>): Promise<ChainRpcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ChainRpcError, `expected a ChainRpcError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a rejection');
}

async function assertRejects(promise: Promise<unknown>, kind: 'transient' | 'final', code: string) {
  const error = await rejection(promise);
  assert.equal(error.code, code, error.message);
  assert.equal(error.transient ? 'transient' : 'final', kind, error.message);
  assert.ok(!error.message.includes('replay.invalid'), `the message names the RPC URL: ${error.message}`);
  return error;
}

describe('EVM fee rules (recorded)', () => {
  it("type 2: the node's tip, a cap of twice the base fee plus the tip, the estimate plus 20%, in one request", async () => {
    const { recording, chain, context, requests, assertAllAnswered } = replay('native');
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    const baseFee = latestBaseFee(recording);
    const tip = BigInt(recordedResult(recording, 'eth_maxPriorityFeePerGas') as string);
    const gas = BigInt(recordedResult(recording, 'eth_estimateGas') as string);
    assert.ok(tip > 0n);
    assert.deepEqual(payment, {
      family: 'EVM',
      chainId: recording.node.chainId,
      type: 2,
      to: context.intent.to,
      value: context.intent.value,
      data: '0x',
      gasLimit: ((gas * 12n + 9n) / 10n).toString(),
      maxFeePerGas: (2n * baseFee + tip).toString(),
      maxPriorityFeePerGas: tip.toString(),
    });
    assert.deepEqual(payment, recording.outcomes['buildTransfer']);
    assert.equal(requests(), 1);
    assertAllAnswered();
  });

  it('previews the fee: cap and expected cost at the gas limit', async () => {
    const { recording, chain, context, assertAllAnswered } = replay('native');
    await chain.buildTransfer(context.from, context.intent);
    const estimate = await chain.estimateFee(context.from, context.intent);
    assert.deepEqual(estimate, recording.outcomes['estimateFee']);
    if (estimate.family !== 'EVM') assert.fail('not an EVM estimate');
    const gasLimit = BigInt(estimate.gasLimit);
    const baseFee = BigInt(estimate.baseFeePerGas!);
    const tip = BigInt(estimate.maxPriorityFeePerGas!);
    assert.equal(estimate.maxFee, (gasLimit * BigInt(estimate.maxFeePerGas!)).toString());
    assert.equal(estimate.expectedFee, (gasLimit * (baseFee + tip)).toString());
    assertAllAnswered();
  });

  it('a zero tip from the node takes the median tip recent blocks paid, from the same request', async () => {
    const { recording, chain, context, requests, assertAllAnswered } = replay(
      'native',
      answer('eth_maxPriorityFeePerGas', { result: '0x0' }),
    );
    // The recorded history: the genesis block (empty) and three blocks paying 2, 3 and 5 gwei.
    const history = recordedResult(recording, 'eth_feeHistory') as { reward: string[][]; gasUsedRatio: number[] };
    assert.deepEqual(
      history.reward.filter((_, i) => history.gasUsedRatio[i]! > 0).map(([tip]) => BigInt(tip!)),
      [2n * GWEI, 3n * GWEI, 5n * GWEI],
    );
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.maxPriorityFeePerGas, (3n * GWEI).toString());
    assert.equal(payment.maxFeePerGas, (2n * latestBaseFee(recording) + 3n * GWEI).toString());
    assert.equal(requests(), 1);
    assertAllAnswered();
  });

  it('a node without eth_maxPriorityFeePerGas gets its tip from the fee history too', async () => {
    const { chain, context, assertAllAnswered } = replay(
      'native',
      answer('eth_maxPriorityFeePerGas', {
        error: { code: -32601, message: 'the method eth_maxPriorityFeePerGas does not exist/is not available' },
      }),
    );
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.maxPriorityFeePerGas, (3n * GWEI).toString());
    assertAllAnswered();
  });

  it('an all-zero history keeps a zero tip', async () => {
    const { recording, chain, context, assertAllAnswered } = replay(
      'zero-tips',
      answer('eth_maxPriorityFeePerGas', { result: '0x0' }),
    );
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.type, 2);
    assert.equal(payment.maxPriorityFeePerGas, '0');
    assert.equal(payment.maxFeePerGas, (2n * latestBaseFee(recording)).toString());
    assertAllAnswered();
  });

  it('a zero tip with the fee history unavailable or invalid is RPC_UNAVAILABLE', async () => {
    const broken: ({ result: unknown } | { error: { code: number; message: string } })[] = [
      { error: { code: -32601, message: 'the method eth_feeHistory does not exist/is not available' } },
      { error: { code: -32000, message: 'header not found' } },
      { result: null },
      { result: { baseFeePerGas: ['0x1'], gasUsedRatio: [0.5] } },
      { result: { baseFeePerGas: ['0x1', '0x1'], gasUsedRatio: [0.5, 0.5], reward: [['0x1']] } },
      { result: { baseFeePerGas: ['0x1'], gasUsedRatio: [0.5], reward: [['1000']] } },
      { result: { baseFeePerGas: ['0x1'], gasUsedRatio: ['0.5'], reward: [['0x1']] } },
      { result: { baseFeePerGas: [], gasUsedRatio: [], reward: [] } },
    ];
    for (const history of broken) {
      const { chain, context } = replay('native', (call) =>
        call.method === 'eth_maxPriorityFeePerGas'
          ? { result: '0x0' }
          : call.method === 'eth_feeHistory'
            ? history
            : undefined,
      );
      await assertRejects(chain.buildTransfer(context.from, context.intent), 'transient', 'RPC_UNAVAILABLE');
    }
  });

  it('a non-zero tip from the node does without the fee history', async () => {
    const { chain, context } = replay('native', answer('eth_feeHistory', { result: { reward: 'broken' } }));
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.maxPriorityFeePerGas, (5n * GWEI).toString(), "anvil's suggestion after a 5 gwei block");
  });

  it('a chain without a base fee gets type 0 at eth_gasPrice', async () => {
    const { recording, chain, context, assertAllAnswered } = replay('no-base-fee');
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.type, 0);
    assert.equal(payment.gasPrice, BigInt(recordedResult(recording, 'eth_gasPrice') as string).toString());
    assert.equal(payment.maxFeePerGas, undefined);
    assert.equal(payment.maxPriorityFeePerGas, undefined);
    const estimate = await replay('no-base-fee').chain.estimateFee(context.from, context.intent);
    if (estimate.family !== 'EVM') assert.fail('not an EVM estimate');
    assert.equal(estimate.baseFeePerGas, undefined);
    assert.equal(estimate.maxFee, estimate.expectedFee);
    assertAllAnswered();

    const noPrice = replay('no-base-fee', answer('eth_gasPrice', { error: { code: -32603, message: 'internal' } }));
    await assertRejects(noPrice.chain.buildTransfer(context.from, context.intent), 'transient', 'RPC_UNAVAILABLE');
  });

  it('the legacy model on a base-fee chain prices at max(eth_gasPrice, base fee + tip)', async () => {
    const recording = loadEvmRecording('native');
    const floor = latestBaseFee(recording) + 5n * GWEI;
    for (const [nodePrice, expected] of [
      [1n, floor],
      [floor + 1n, floor + 1n],
      [100n * GWEI, 100n * GWEI],
    ] as const) {
      const { chain, context } = replay('native', answer('eth_gasPrice', { result: `0x${nodePrice.toString(16)}` }), {
        feeModel: 'legacy',
      });
      const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
      assert.equal(payment.type, 0);
      assert.equal(payment.gasPrice, expected.toString());
    }
  });

  it('fees a transfer fixes completely are kept and no fee is asked of the node, even with its fee data broken', async () => {
    for (const evm of [
      { type: 2 as const, maxFeePerGas: '7000000000', maxPriorityFeePerGas: '0' },
      { type: 0 as const, gasPrice: '3000000000' },
    ]) {
      const methods: string[] = [];
      const { chain, context } = replay('native', (call) => {
        methods.push(call.method);
        return ['eth_feeHistory', 'eth_maxPriorityFeePerGas', 'eth_gasPrice', 'eth_getBlockByNumber'].includes(
          call.method,
        )
          ? { error: { code: -32603, message: 'internal' } }
          : undefined;
      });
      const payment = (await chain.buildTransfer(context.from, { ...context.intent, evm })) as EvmUnsignedPayment;
      assert.equal(payment.type, evm.type);
      if (evm.type === 2) {
        assert.equal(payment.maxFeePerGas, evm.maxFeePerGas);
        assert.equal(payment.maxPriorityFeePerGas, '0', 'a zero tip given is kept: no fee history needed');
      } else assert.equal(payment.gasPrice, evm.gasPrice);
      assert.ok(methods.includes('eth_estimateGas'), 'the calls made are seen here');
      assert.ok(!methods.includes('eth_feeHistory') && !methods.includes('eth_gasPrice'), methods.join(', '));
    }
  });

  it('fees a transfer fixes in part are kept; the node fills the rest; a given gas limit is not estimated', async () => {
    const methods: string[] = [];
    const { recording, chain, context } = replay('native', (call) => {
      methods.push(call.method);
      return undefined;
    });
    const baseFee = latestBaseFee(recording);
    const tipOnly = (await chain.buildTransfer(context.from, {
      ...context.intent,
      evm: { type: 2, maxPriorityFeePerGas: '3', gasLimit: '50000' },
    })) as EvmUnsignedPayment;
    assert.deepEqual(
      [tipOnly.maxPriorityFeePerGas, tipOnly.maxFeePerGas, tipOnly.gasLimit],
      ['3', (2n * baseFee + 3n).toString(), '50000'],
    );
    assert.ok(methods.includes('eth_getBlockByNumber'), 'the calls made are seen here');
    assert.ok(!methods.includes('eth_estimateGas'), 'a given gas limit is not estimated');
    // A cap below the node's tip: the tip is lowered to the cap (a tip above its cap is no valid transaction).
    const capOnly = (await replay('native').chain.buildTransfer(context.from, {
      ...context.intent,
      evm: { type: 2, maxFeePerGas: '1000' },
    })) as EvmUnsignedPayment;
    assert.deepEqual([capOnly.maxFeePerGas, capOnly.maxPriorityFeePerGas], ['1000', '1000']);
    // Type 0 asked on a base-fee chain: the greater of the node's price and base fee plus tip.
    const legacy = (await replay('native').chain.buildTransfer(context.from, {
      ...context.intent,
      evm: { type: 0 },
    })) as EvmUnsignedPayment;
    assert.equal(legacy.type, 0);
    assert.ok(BigInt(legacy.gasPrice!) >= baseFee + 5n * GWEI);
  });

  it('type 2 fees the service must price on a chain without a base fee are refused naming type', async () => {
    const { chain, context } = replay('no-base-fee');
    await assert.rejects(
      chain.buildTransfer(context.from, { ...context.intent, evm: { type: 2, maxPriorityFeePerGas: '1' } }),
      (err: unknown) => err instanceof ChainInputError && err.field === 'type',
    );
  });

  it('an underfunded native transfer is estimated again without its value (geth refuses the first)', async () => {
    const recording = loadEvmRecording('native');
    const gas = recordedResult(recording, 'eth_estimateGas');
    const geth: AnswerEdit = (call) => {
      if (call.method !== 'eth_estimateGas') return undefined;
      const [tx] = call.params as [{ value?: string }];
      return tx.value === undefined
        ? { result: gas }
        : { error: { code: -32000, message: 'insufficient funds for transfer' } };
    };
    const { chain, context, requests, assertAllAnswered } = replay('native', geth);
    const payment = (await chain.buildTransfer(context.from, context.intent)) as EvmUnsignedPayment;
    assert.equal(payment.gasLimit, '25200');
    assert.equal(payment.value, context.intent.value, 'the value is still sent');
    assert.equal(requests(), 2);
    assertAllAnswered();

    // Not even estimable without the value: the node's verdict on the funds stands.
    const refused = replay('native', (call, recorded) =>
      call.method === 'eth_estimateGas'
        ? { error: { code: -32000, message: 'insufficient funds for gas * price + value' } }
        : recorded,
    );
    await assertRejects(
      refused.chain.buildTransfer(context.from, context.intent),
      'final',
      'INSUFFICIENT_NATIVE_BALANCE',
    );
  });

  it('concurrent transfers share one fee-data fetch and one HTTP request', async () => {
    const { chain, context, requests, assertAllAnswered } = replay('native', undefined, { feeDataMaxAgeMs: 1_000 });
    const [first, second] = await Promise.all([
      chain.buildTransfer(context.from, context.intent),
      chain.buildTransfer(context.from, context.intent),
    ]);
    assert.deepEqual(first, second);
    assert.equal(requests(), 1);
    assertAllAnswered();
  });

  it('a node answering HTTP 503, 429, 401 or a page that is not JSON-RPC is RPC_UNAVAILABLE', async () => {
    const { context } = replay('native');
    for (const [status, body, type] of [
      [503, 'Service Unavailable', 'text/plain'],
      [429, '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"rate limited"}}', 'application/json'],
      [401, 'Unauthorized', 'text/plain'],
      [200, '<html>proxy error</html>', 'text/html'],
    ] as const) {
      const chain = createEvmChain({
        chainId: 31337,
        rpcUrl: 'http://replay.invalid:8545/secret-api-key',
        environment: 'development',
        fetchFn: async () => new Response(body, { status, headers: { 'content-type': type } }),
      });
      for (const call of [
        () => chain.buildTransfer(context.from, context.intent),
        () => chain.broadcast('0x02f86a'),
        () => chain.pendingNonce!(context.from),
        () => chain.observe([{ hash: `0x${'ab'.repeat(32)}`, from: context.from, nonce: 0 }]),
      ]) {
        const error = await assertRejects(call(), 'transient', 'RPC_UNAVAILABLE');
        assert.ok(!error.message.includes('secret-api-key'), error.message);
      }
    }
  });
  it('an RPC URL serving another chain prices nothing', async () => {
    const { chain, context } = replay('native', undefined, { chainId: 1 });
    const error = await assertRejects(
      chain.buildTransfer(context.from, context.intent),
      'transient',
      'RPC_UNAVAILABLE',
    );
    assert.match(error.message, /another chain/);
  });

  it('a node that does not answer within timeoutMs is RPC_UNAVAILABLE', async () => {
    const { context } = replay('native');
    const silent: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const chain = createEvmChain({
      chainId: 31337,
      rpcUrl: 'http://replay.invalid:8545',
      environment: 'development',
      timeoutMs: 50,
      fetchFn: silent,
    });
    const error = await assertRejects(chain.pendingNonce!(context.from), 'transient', 'RPC_UNAVAILABLE');
    assert.match(error.message, /in time/);
    await assertRejects(
      chain.observe([{ hash: `0x${'ab'.repeat(32)}`, from: context.from }]),
      'transient',
      'RPC_UNAVAILABLE',
    );
  });
});

describe('ERC-20 transfers (recorded)', () => {
  const intents = () =>
    loadEvmRecording('erc20').context['intents'] as Record<
      'ok' | 'aboveBalance' | 'noCode' | 'reverts',
      TransferIntent
    >;

  it('builds a token transfer, and refuses one above the balance, a token without code and a revert', async () => {
    const { recording, chain, context, assertAllAnswered } = replay('erc20');
    const all = intents();
    assert.deepEqual(
      await chain.buildTransfer(context.from, all.ok),
      (recording.outcomes['ok'] as { resolved: unknown }).resolved,
    );
    await assertRejects(chain.buildTransfer(context.from, all.aboveBalance), 'final', 'INSUFFICIENT_TOKEN_BALANCE');
    await assertRejects(chain.buildTransfer(context.from, all.noCode), 'final', 'INVALID_TOKEN');
    const reverted = await assertRejects(chain.buildTransfer(context.from, all.reverts), 'final', 'EXECUTION_FAILED');
    assert.match(reverted.message, /execution reverted/);
    assertAllAnswered();
  });

  it('a balanceOf that reverts means the address is not a token', async () => {
    const { chain, context } = replay(
      'erc20',
      answer('eth_call', { error: { code: 3, message: 'execution reverted' } }),
    );
    await assertRejects(chain.buildTransfer(context.from, intents().ok), 'final', 'INVALID_TOKEN');
  });

  it('an unanswered estimate is transient even when the balance would refuse the transfer', async () => {
    const { chain, context } = replay(
      'erc20',
      answer('eth_estimateGas', { error: { code: -32005, message: 'daily request limit reached' } }),
    );
    await assertRejects(chain.buildTransfer(context.from, intents().aboveBalance), 'transient', 'RPC_UNAVAILABLE');
  });
});

describe('broadcast verdicts (recorded)', () => {
  it('classifies what anvil answered: already imported, underpriced, insufficient funds, nonce too low', async () => {
    const { recording, chain, context, assertAllAnswered } = replay('broadcast');
    // The build and nonce of the scenario come first in the recording.
    await chain.buildTransfer(context.from, {
      kind: 'NATIVE',
      to: '0x000000000000000000000000000000000000dEaD',
      value: '1',
    });
    await chain.pendingNonce!(context.from);
    const signed = context['signed'] as Record<'pending' | 'replacement' | 'unfunded', string>;
    await chain.broadcast(signed.pending);
    await chain.broadcast(signed.pending);
    await assertRejects(chain.broadcast(signed.replacement), 'final', 'TRANSACTION_REJECTED');
    await assertRejects(chain.broadcast(signed.unfunded), 'final', 'INSUFFICIENT_NATIVE_BALANCE');
    await assertRejects(chain.broadcast(signed.replacement), 'final', 'NONCE_TOO_LOW');
    assert.deepEqual(
      Object.keys(recording.outcomes).filter((name) => 'rejected' in (recording.outcomes[name] as object)),
      ['replacement', 'unfunded', 'usedNonce'],
    );
    assertAllAnswered();
  });

  it('a rebroadcast of mined bytes ("nonce too low", hash known) is accepted', async () => {
    const { chain, context, assertAllAnswered } = replay('native');
    await chain.buildTransfer(context.from, context.intent);
    await chain.estimateFee(context.from, context.intent);
    await chain.pendingNonce!(context.from);
    const raw = context['signedTransaction'] as string;
    await chain.broadcast(raw);
    await chain.broadcast(raw);
    assertAllAnswered();
  });

  it("geth's and others' wordings", async () => {
    const { context } = replay('native');
    const raw = context['signedTransaction'] as string;
    const cases: [string, 'accepted' | [kind: 'transient' | 'final', code: string]][] = [
      ['already known', 'accepted'],
      ['Known transaction', 'accepted'],
      ['AlreadyKnown', 'accepted'],
      [
        'insufficient funds for gas * price + value: balance 0, tx cost 25200',
        ['final', 'INSUFFICIENT_NATIVE_BALANCE'],
      ],
      ['replacement transaction underpriced', ['final', 'TRANSACTION_REJECTED']],
      ['transaction underpriced: tip needed 1, tip permitted 0', ['final', 'TRANSACTION_REJECTED']],
      ['invalid sender', ['final', 'TRANSACTION_REJECTED']],
      ['nonce too high', ['transient', 'TRANSACTION_REJECTED']],
      ['txpool is full', ['transient', 'TRANSACTION_REJECTED']],
    ];
    for (const [message, expected] of cases) {
      const { chain } = replay('native', answer('eth_sendRawTransaction', { error: { code: -32000, message } }));
      if (expected === 'accepted') await chain.broadcast(raw);
      else await assertRejects(chain.broadcast(raw), expected[0], expected[1]);
    }
    const unknownHash = replay('native', (call) =>
      call.method === 'eth_sendRawTransaction'
        ? { error: { code: -32000, message: 'nonce too low: next nonce 5, tx nonce 4' } }
        : call.method === 'eth_getTransactionByHash'
          ? { result: null }
          : undefined,
    );
    await assertRejects(unknownHash.chain.broadcast(raw), 'final', 'NONCE_TOO_LOW');
  });
});

describe('observe (recorded)', () => {
  function items(recording: EvmRecording): ObserveItem[] {
    return recording.context['items'] as ObserveItem[];
  }

  async function replayScenario(edit?: AnswerEdit, wrap?: (fetchFn: typeof fetch) => typeof fetch) {
    const recording = loadEvmRecording('observe');
    const served = createReplayFetch(recording, edit);
    const chain = createEvmChain({
      chainId: recording.node.chainId,
      rpcUrl: 'http://replay.invalid:8545',
      environment: 'development',
      fetchFn: wrap ? wrap(served.fetchFn) : served.fetchFn,
      feeDataMaxAgeMs: 0,
      // The recording's rounds read finalized nonces from the first round on.
      nonceCheckAfterMs: 0,
    });
    const [dropped] = items(recording);
    await chain.buildTransfer(dropped!.from, {
      kind: 'NATIVE',
      to: '0x000000000000000000000000000000000000dEaD',
      value: '1',
    });
    await chain.pendingNonce!(dropped!.from);
    return { recording, chain, served };
  }

  it('reads included, unknown, then nonce_consumed with its winner in 2 and then 5 requests', async () => {
    const { recording, chain, served } = await replayScenario();
    const early = await chain.observe(items(recording));
    const late = await chain.observe(items(recording));
    const toJson = (round: typeof early) => ({
      observations: Object.fromEntries(round.observations),
      roundTrips: round.roundTrips,
    });
    assert.deepEqual(toJson(early), recording.outcomes['early']);
    assert.deepEqual(toJson(late), recording.outcomes['late']);
    const [dropped, winner, neverSent] = items(recording);
    assert.deepEqual(late.observations.get(dropped!.hash), {
      status: 'dropped',
      reason: 'nonce_consumed',
      winningHash: winner!.hash,
    });
    assert.equal(late.observations.get(winner!.hash)?.status, 'included');
    assert.deepEqual(late.observations.get(neverSent!.hash), { status: 'unknown' });
    assert.deepEqual(served.unanswered, []);
  });

  it('matches answers to calls by id when the node answers a batch out of order', async () => {
    const reversing =
      (fetchFn: typeof fetch): typeof fetch =>
      async (input, init) => {
        const response = await fetchFn(input, init);
        const body = (await response.json()) as unknown;
        return new Response(JSON.stringify(Array.isArray(body) ? body.reverse() : body), {
          headers: { 'content-type': 'application/json' },
        });
      };
    const { recording, chain } = await replayScenario(undefined, reversing);
    await chain.observe(items(recording));
    const late = await chain.observe(items(recording));
    assert.deepEqual(
      Object.fromEntries(late.observations),
      (recording.outcomes['late'] as { observations: unknown }).observations,
    );
  });

  it('a receipt that appears by the third request wins over nonce_consumed', async () => {
    const recording = loadEvmRecording('observe');
    const [dropped, winner] = items(recording);
    const winnerReceipt = recordedReceipt(recording, winner!.hash);
    let lookups = 0;
    const { chain } = await replayScenario((call, recorded) => {
      if (call.method !== 'eth_getTransactionReceipt' || call.params[0] !== dropped!.hash) return undefined;
      lookups++;
      // Lookups 1 and 2 are the first requests of the two rounds; 3 is the late round's recheck.
      return lookups === 3 ? { result: { ...winnerReceipt, transactionHash: dropped!.hash } } : recorded;
    });
    await chain.observe(items(recording));
    const late = await chain.observe(items(recording));
    assert.equal(lookups, 3);
    assert.equal(late.observations.get(dropped!.hash)?.status, 'included');
  });

  it('a missing finalized block or an errored receipt fails the round as RPC_UNAVAILABLE', async () => {
    const noFinalized = await replayScenario((call, recorded) =>
      call.method === 'eth_getBlockByNumber' && call.params[0] === 'finalized' ? { result: null } : recorded,
    );
    await assertRejects(noFinalized.chain.observe(items(noFinalized.recording)), 'transient', 'RPC_UNAVAILABLE');
    const erroredReceipt = await replayScenario(
      answer('eth_getTransactionReceipt', { error: { code: -32005, message: 'too many requests' } }),
    );
    await assertRejects(erroredReceipt.chain.observe(items(erroredReceipt.recording)), 'transient', 'RPC_UNAVAILABLE');
  });
});

function recordedReceipt(recording: EvmRecording, hash: string): Record<string, unknown> {
  for (const exchange of recording.exchanges) {
    for (const response of exchange.response as { result?: { transactionHash?: string } }[]) {
      if (response.result?.transactionHash === hash) return response.result as Record<string, unknown>;
    }
  }
  throw new Error(`no receipt of ${hash} in the recording`);
}
