import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SignatureDecision, SignatureRequest } from '../signing/signature-policy.ts';
import type { ReplacementInput } from './payment.machine.ts';
import { createReplacementAuthority } from './replacement-authority.ts';

const ADMITTED = Date.parse('2026-11-26T10:00:00Z');
const input: ReplacementInput = {
  chainKey: 'evm:1',
  from: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  payload: { family: 'EVM' },
  ceiling: '1000',
  apiKeyId: 'k1',
  projectId: 'p1',
  walletId: 'w1',
  admittedAt: ADMITTED,
  chainId: '1',
};

function authority(opts: {
  rotatedAt?: string | null;
  claimed?: boolean;
  decision?: SignatureDecision;
  noKey?: boolean;
}) {
  const asked: SignatureRequest[] = [];
  const check = createReplacementAuthority({
    apiKeys: {
      get: (id) =>
        opts.noKey
          ? undefined
          : ({
              id,
              projectId: 'p1',
              environment: 'production',
              secretHash: 'h',
              createdAt: 'c',
              rotatedAt: opts.rotatedAt ?? null,
            } as never),
    },
    wallets: { getAny: (id) => ({ id, claimedAt: opts.claimed ? '2026-11-26T11:00:00Z' : null }) as never },
    policy: {
      decide: (r) => {
        asked.push(r);
        return opts.decision ?? { effect: 'allow' };
      },
    },
  });
  return { check, asked };
}

test('the authority that admitted a payment stands: the replacement is asked of the policy as a transfer', async () => {
  const { check, asked } = authority({ rotatedAt: '2026-11-26T09:00:00Z' });
  assert.equal(await check(input), null, 'a rotation before admission does not count');
  assert.equal(asked.length, 1);
  assert.deepEqual(
    [asked[0]!.principal, asked[0]!.operation, asked[0]!.chainId, asked[0]!.rawSignature],
    [{ keyId: 'k1', projectId: 'p1', environment: 'production' }, 'transfer', '1', false],
  );
});

test('a key rotated since admission, a deleted key or a claimed wallet end it; so do a deny and a review', async () => {
  assert.equal(await authority({ rotatedAt: '2026-11-26T10:00:01Z' }).check(input), 'SIGNING_AUTHORITY_ENDED');
  assert.equal(await authority({ noKey: true }).check(input), 'SIGNING_AUTHORITY_ENDED');
  assert.equal(await authority({ claimed: true }).check(input), 'SIGNING_AUTHORITY_ENDED');
  assert.equal(await authority({ decision: { effect: 'deny', reason: 'cap' } }).check(input), 'POLICY_DENIED');
  assert.equal(await authority({ decision: { effect: 'review', details: {} } }).check(input), 'POLICY_REVIEW_REQUIRED');
});
