import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Transaction as SuiTransaction } from '@mysten/sui/transactions';
import { Account, BASE_FEE, Keypair, Networks, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import Fastify from 'fastify';
import { ChainInputError } from '../chains/chain-input-error.ts';
import { ServiceError } from '../chains/domain/errors.ts';
import { EIP155_EXAMPLE } from '../fixtures/eip155-example.ts';
import { EIP712_MAIL as MAIL } from '../fixtures/eip712-mail.ts';
import { createChainPool } from './chain-pool.ts';
import { chainSteps } from './chain-steps.ts';
import { errorsPlugin } from './plugins/errors.ts';

/** The real worker plus a step that never returns (test/helpers/hanging-chain.worker.ts). */
const HANGING_WORKER = new URL('../test/helpers/hanging-chain.worker.ts', import.meta.url);

/** Always a worker (every input counts as large); a loaded test machine may take seconds to start one. */
const onWorkers = createChainPool({ threads: 1, inlineBelowBytes: 0, waitLimitMs: 120_000 });
after(() => onWorkers.close());

/** EIP-155's example transaction with 20 KB of data. */
const EVM_TX = { ...EIP155_EXAMPLE, data: `0x${'ab'.repeat(20_000)}` };

/** Typed data of about `kib` KiB: a Mail whose contents is long. */
function largeMail(kib: number) {
  return { ...MAIL, message: { ...MAIL.message, contents: 'x'.repeat(kib * 1024) } };
}

describe('chain pool', { timeout: 120_000 }, () => {
  it('answers on a worker exactly what the step answers inline', async () => {
    const typedData = largeMail(64);
    assert.deepEqual(await onWorkers.run('hashEvmTypedData', [typedData], 1), chainSteps.hashEvmTypedData(typedData));

    const prepared = await onWorkers.run('prepareEvmTransaction', [EVM_TX], 1);
    assert.deepEqual(prepared, chainSteps.prepareEvmTransaction(EVM_TX));
    assert.equal(typeof prepared.transaction.gas, 'bigint', 'bigints survive the trip');
    const signature = { rs: new Uint8Array(64).fill(1), recovery: 1 as const };
    assert.equal(
      await onWorkers.run('serializeSignedEvmTransaction', [prepared, signature], 1),
      chainSteps.serializeSignedEvmTransaction(prepared, signature),
    );

    const tx = new SuiTransaction();
    tx.setSender(`0x${'33'.repeat(32)}`);
    tx.setGasPrice(1000);
    tx.setGasBudget(10_000_000);
    tx.setGasPayment([
      { objectId: `0x${'11'.repeat(32)}`, version: '1', digest: '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi' },
    ]);
    tx.splitCoins(
      tx.gas,
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
    const b64 = Buffer.from(await tx.build()).toString('base64');
    assert.deepEqual(await onWorkers.run('prepareSuiTransaction', [b64], 1), chainSteps.prepareSuiTransaction(b64));

    const stellarKey = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 9));
    const envelope = new TransactionBuilder(new Account(stellarKey.publicKey(), '1'), {
      fee: BASE_FEE,
      networkPassphrase: Networks.TESTNET,
    })
      .addOperation(Operation.bumpSequence({ bumpTo: '5' }))
      .setTimeout(60)
      .build()
      .toXDR();
    const stellar = await onWorkers.run('prepareStellarTransaction', [envelope, Networks.TESTNET], 1);
    assert.deepEqual(stellar, chainSteps.prepareStellarTransaction(envelope, Networks.TESTNET));
    const stellarArgs = [stellar, stellarKey.rawPublicKey(), stellarKey.sign(Buffer.from(stellar.hash))] as const;
    assert.equal(
      await onWorkers.run('attachStellarSignature', [...stellarArgs], 1),
      chainSteps.attachStellarSignature(...stellarArgs),
    );
  });

  it("returns a worker's ChainInputError as a ChainInputError with its field", async () => {
    const bad = { ...MAIL, message: { ...MAIL.message, to: { name: 'Bob', wallet: 'not an address' } } };
    const inline = (() => {
      try {
        chainSteps.hashEvmTypedData(bad);
      } catch (error) {
        return error as ChainInputError;
      }
      assert.fail('the inline step accepted a bad address');
    })();
    await assert.rejects(onWorkers.run('hashEvmTypedData', [bad], 1), (error: unknown) => {
      assert.ok(error instanceof ChainInputError);
      assert.equal(error.field, inline.field);
      assert.equal(error.message, inline.message);
      return true;
    });
    await assert.rejects(onWorkers.run('prepareSuiTransaction', ['not base64!'], 1), ChainInputError);
  });

  it('refuses input nested too deep to send to a worker, without running it on the event loop', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const where: string[] = [];
    const pool = createChainPool({
      threads: 1,
      inlineBelowBytes: 0,
      waitLimitMs: 120_000,
      onRun: (_, w) => where.push(w),
    });
    try {
      // Inline, prepareEvmTransaction would have answered "to must be an EVM address string": it never sees it.
      await assert.rejects(pool.run('prepareEvmTransaction', [{ ...EVM_TX, to: deep } as never], 1), {
        name: 'ChainInputError',
        message: 'the input is nested too deeply to be processed',
      });
      assert.deepEqual(where, ['worker']);
    } finally {
      await pool.close();
    }
  });

  it('aborts a step past its time limit, replaces the stuck worker, and serves the next step on a fresh one', async () => {
    // The waiting limit covers a worker's start-up, which takes seconds on a loaded machine; the running limit only
    // counts from the worker's "started" message.
    const pool = createChainPool({
      threads: 1,
      inlineBelowBytes: 0,
      timeLimitMs: 400,
      waitLimitMs: 120_000,
      workerFile: HANGING_WORKER,
    });
    try {
      const typedData = largeMail(4);
      const expected = chainSteps.hashEvmTypedData(typedData);
      assert.deepEqual(await pool.run('hashEvmTypedData', [typedData], 1), expected);
      const [stuck] = pool.threadIds;
      assert.equal(typeof stuck, 'number');
      await assert.rejects(pool.run('hang' as never, [] as never, 1), (error: unknown) => {
        assert.ok(error instanceof ServiceError);
        assert.equal(error.code, 'SERVICE_BUSY');
        assert.equal(error.httpStatus, 503);
        assert.equal(error.transient, true);
        assert.match(error.message, /did not finish within 400 ms/);
        return true;
      });
      assert.deepEqual(await pool.run('hashEvmTypedData', [typedData], 1), expected);
      assert.equal(pool.threadIds.length, 1);
      assert.notEqual(pool.threadIds[0], stuck, 'the stuck worker was replaced');
    } finally {
      await pool.close();
    }
  });

  it('drops a step that waited too long for a thread, without touching the worker that is busy', async () => {
    const pool = createChainPool({
      threads: 1,
      inlineBelowBytes: 0,
      timeLimitMs: 120_000,
      waitLimitMs: 300,
      workerFile: HANGING_WORKER,
    });
    try {
      // Until the worker has loaded, steps wait longer than 300 ms and are dropped (the loading worker is kept).
      for (;;) {
        try {
          await pool.run('hashEvmTypedData', [MAIL], 1);
          break;
        } catch (error) {
          assert.equal((error as ServiceError).code, 'SERVICE_BUSY');
        }
      }
      const [busyThread] = pool.threadIds;
      const running = pool.run('hang' as never, [] as never, 1);
      running.catch(() => {});
      await assert.rejects(pool.run('hashEvmTypedData', [MAIL], 1), {
        code: 'SERVICE_BUSY',
        message: 'the request waited 300 ms for a thread; retry later',
      });
      assert.equal(pool.queueSize, 0, 'the dropped step left the queue');
      assert.deepEqual(pool.threadIds, [busyThread], 'the busy worker was not stopped');
    } finally {
      await pool.close();
    }
  });

  it('bounds the queue: past maxQueue waiting steps a step is refused at once with a 503, not queued', async () => {
    const pool = createChainPool({
      threads: 1,
      inlineBelowBytes: 0,
      maxQueue: 2,
      waitLimitMs: 120_000,
      workerFile: HANGING_WORKER,
    });
    try {
      const running = pool.run('hang' as never, [] as never, 1);
      const queued = [pool.run('hashEvmTypedData', [MAIL], 1), pool.run('hashEvmTypedData', [MAIL], 1)];
      const settled = Promise.allSettled([running, ...queued]);
      await assert.rejects(pool.run('hashEvmTypedData', [MAIL], 1), (error: unknown) => {
        assert.ok(error instanceof ServiceError);
        assert.equal(error.code, 'SERVICE_BUSY');
        assert.equal(error.httpStatus, 503);
        assert.match(error.message, /2 large requests are already waiting for a thread/);
        return true;
      });
      assert.equal(pool.queueSize, 2);

      // What the partner receives: the service's envelope, 503, with Retry-After.
      const app = Fastify();
      await app.register(errorsPlugin);
      app.post('/sign', async () => pool.run('hashEvmTypedData', [MAIL], 1));
      const res = await app.inject({ method: 'POST', url: '/sign' });
      await app.close();
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers['retry-after'], '1');
      const body = res.json() as { code: string; message: string; requestId: string };
      assert.equal(body.code, 'SERVICE_BUSY');
      assert.match(body.message, /already waiting for a thread; retry later/);
      assert.equal(typeof body.requestId, 'string');

      await pool.close();
      // Closing the pool answers the stuck and the queued steps too.
      for (const outcome of await settled) assert.equal(outcome.status, 'rejected');
    } finally {
      await pool.close();
    }
  });

  it('starts no thread before the first large input, then every thread with it', async () => {
    const pool = createChainPool({ threads: 2, waitLimitMs: 120_000 });
    try {
      assert.deepEqual(await pool.run('hashEvmTypedData', [MAIL], 400), chainSteps.hashEvmTypedData(MAIL));
      assert.deepEqual(pool.threadIds, [], 'small inputs run inline and start no worker thread');
      const large = largeMail(64);
      assert.deepEqual(
        await pool.run('hashEvmTypedData', [large], 64 * 1024),
        chainSteps.hashEvmTypedData(large),
        'the first large input waits for the workers to load, then is answered',
      );
      assert.equal(pool.threadIds.length, 2);
    } finally {
      await pool.close();
    }
  });

  it('keeps the event loop turning while a large input is worked on; a small one runs inline', async () => {
    const pool = createChainPool({ threads: 1, waitLimitMs: 120_000 });
    try {
      const turnsWhile = async (run: () => Promise<unknown>): Promise<number> => {
        let turns = 0;
        let turning = true;
        const spin = () => {
          if (!turning) return;
          turns++;
          setImmediate(spin);
        };
        setImmediate(spin);
        await run();
        turning = false;
        return turns;
      };
      const large = largeMail(512);
      assert.ok(
        (await turnsWhile(() => pool.run('hashEvmTypedData', [large], 600 * 1024))) > 0,
        'a large body is hashed off the event loop',
      );
      assert.equal(
        await turnsWhile(() => pool.run('hashEvmTypedData', [MAIL], 400)),
        0,
        'a small body is hashed inline, without a hop',
      );
    } finally {
      await pool.close();
    }
  });
});
