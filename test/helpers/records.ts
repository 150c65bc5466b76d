/**
 * Reading transaction records as a partner does, for the specs that follow payments the service works on in the
 * background (auto-retry on anvil and on the Solana façade): one record, or polling until it gets somewhere.
 */
import assert from 'node:assert/strict';
import { mine, rpc, setAutomine } from '../../fixtures/evm-helpers.ts';
import type { TestService } from './service.ts';

export interface RecordReader {
  /** The single-record lookup (200 asserted). */
  record(walletId: string, id: string, secret?: string): Promise<any>;
  /**
   * Polls the record until `done` holds, and returns it with `seen`: every status it had on the way (in order, each
   * once). Throws with the last record after `timeoutMs`.
   */
  until(
    walletId: string,
    id: string,
    done: (r: any) => boolean,
    opts?: { timeoutMs?: number; secret?: string },
  ): Promise<any & { seen: string[] }>;
}

export const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

/**
 * Records read from the service `svc()` gives with `secret()` (a partner's key) unless a call passes another (after a
 * rotation). Both are read at each call: a spec's service and partner are made in its `before`.
 */
export function recordReader(
  svc: () => Pick<TestService, 'v1'>,
  secret: () => string,
  defaults: { timeoutMs?: number } = {},
): RecordReader {
  async function record(walletId: string, id: string, as = secret()) {
    const r = await svc().v1(as, 'GET', `/wallets/${walletId}/transactions/${id}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  }
  return {
    record,
    async until(walletId, id, done, { timeoutMs = defaults.timeoutMs ?? 15_000, secret: as } = {}) {
      const end = Date.now() + timeoutMs;
      const seen: string[] = [];
      for (;;) {
        const r = await record(walletId, id, as);
        if (seen.at(-1) !== r.status) seen.push(r.status);
        if (done(r)) return Object.assign(r, { seen });
        if (Date.now() > end) throw new Error(`record never got there: ${JSON.stringify(r)} after ${seen.join(' → ')}`);
        await sleep(50);
      }
    },
  };
}

/** What an EVM auto-retry spec reads of anvil and how it holds its mining back. */
export function anvilView(rpcUrl: () => string, records: Pick<RecordReader, 'record'>) {
  return {
    async balance(address: string): Promise<bigint> {
      return BigInt(await rpc<string>(rpcUrl(), 'eth_getBalance', [address, 'latest']));
    },
    async nonceOf(address: string, tag: 'latest' | 'pending' = 'latest'): Promise<number> {
      return Number(await rpc<string>(rpcUrl(), 'eth_getTransactionCount', [address, tag]));
    },
    /** Runs `fn` with anvil's automine off (attempts wait in the pool), and turns it back on whatever happens. */
    async withMiningHeld(fn: () => Promise<void>): Promise<void> {
      await setAutomine(rpcUrl(), false);
      try {
        await fn();
      } finally {
        await setAutomine(rpcUrl(), true);
      }
    },
    /** Mines until the record is final; the poller needs finality (slotsInAnEpoch 1: two blocks). */
    async mineUntilFinal(walletId: string, id: string) {
      for (let i = 0; i < 200; i++) {
        const r = await records.record(walletId, id);
        if (r.status !== 'submitted' && r.status !== 'pending') return r;
        await mine(rpcUrl(), 1);
        await sleep(50);
      }
      throw new Error('not final');
    },
  };
}
