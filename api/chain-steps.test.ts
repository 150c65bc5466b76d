import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WALLET_TYPES } from '../chains/domain/wallets.ts';
import { walletFamilies } from '../chains/wallet-families.ts';
import { chainSteps } from './chain-steps.ts';

describe('chainSteps', () => {
  it("registers exactly the adapters' pool steps, under their names", () => {
    const declared = WALLET_TYPES.flatMap((type) => Object.entries(walletFamilies[type].poolSteps));
    assert.deepEqual(Object.keys(chainSteps).sort(), declared.map(([name]) => name).sort());
    for (const [name, step] of declared) {
      assert.equal(chainSteps[name as keyof typeof chainSteps], step, name);
    }
  });
});
