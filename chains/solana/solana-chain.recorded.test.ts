import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { replayingFetch, type SolanaRecording } from '../../fixtures/rpc/solana-recording.ts';
import { SOLANA_SCENARIOS } from '../../fixtures/rpc/solana-scenarios.ts';
import { createSolanaChain } from './solana-chain.ts';

// Replays the exchanges `fixtures/rpc/record-solana.ts` recorded against the façade: no node runs here. Each
// request the adapter makes must be the recorded one, in order, and the scenario must use the whole recording.
describe('Solana chain on recorded RPC exchanges', () => {
  for (const name of Object.keys(SOLANA_SCENARIOS)) {
    it(`${name}: ${SOLANA_SCENARIOS[name]!.description}`, async () => {
      const recording = JSON.parse(
        readFileSync(new URL(`../../fixtures/rpc/${name}.json`, import.meta.url), 'utf8'),
      ) as SolanaRecording;
      assert.equal(recording.scenario, name);
      const replay = replayingFetch(recording);
      const chain = createSolanaChain({
        network: 'SOLANA_DEVNET',
        rpcUrl: 'http://recorded.invalid',
        environment: 'any',
        fetchFn: replay.fetchFn,
        // As recorded: the absence after expiry is proof at once.
        expiryProofAfterMs: 0,
      });
      const idle = async (): Promise<void> => {};
      try {
        await SOLANA_SCENARIOS[name]!.run({
          chain,
          control: {
            pauseSlots: idle,
            resumeSlots: idle,
            advanceSlots: async () => ({ slot: 0, blockHeight: 0 }),
            dropNextTransactions: idle,
            failNextHttp: idle,
          },
          sleep: idle,
          inputs: recording.inputs,
        });
      } finally {
        assert.deepEqual(replay.problems, []);
      }
      assert.equal(replay.remaining(), 0, 'the scenario left recorded exchanges unplayed');
    });
  }
});
