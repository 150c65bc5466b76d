import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Transaction as SuiTransaction } from '@mysten/sui/transactions';
import { ChainInputError } from '../chains/chain-input-error.ts';
import { EIP155_EXAMPLE } from '../fixtures/eip155-example.ts';
import { EIP712_MAIL as MAIL } from '../fixtures/eip712-mail.ts';
import { createChainPool } from './chain-pool.ts';
import { chainSteps } from './chain-steps.ts';

/** Always a worker (every input counts as large). */
const onWorkers = createChainPool({ threads: 1, inlineBelowBytes: 0 });
after(() => onWorkers.close());

/** EIP-155's example transaction with 20 KB of data. */
const EVM_TX = { ...EIP155_EXAMPLE, data: `0x${'ab'.repeat(20_000)}` };

/** Typed data of about `kib` KiB: a Mail whose contents is long. */
function largeMail(kib: number) {
  return { ...MAIL, message: { ...MAIL.message, contents: 'x'.repeat(kib * 1024) } };
}

describe('chain pool', () => {
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

  it('input nested too deep to send to a worker is refused inline, as a ChainInputError', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    await assert.rejects(
      onWorkers.run('prepareEvmTransaction', [{ ...EVM_TX, to: deep } as never], 1),
      ChainInputError,
    );
  });

  it('keeps the event loop turning while a large input is worked on; a small one runs inline', async () => {
    const pool = createChainPool({ threads: 1 });
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
