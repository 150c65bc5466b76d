import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { SignItem } from './sign.ts';
import { packSignItems, unpackSignItems } from './sign-batch.ts';

const item = (i: number, scheme: SignItem['scheme']): SignItem => ({
  walletId: `wallet-${i}-é`,
  scheme,
  publicKey: randomBytes(scheme === 'DKLS' ? 65 : 32).toString('hex'),
  shares: new Uint8Array(randomBytes(200 + i)),
  message: new Uint8Array(randomBytes(i === 0 ? 0 : 32)),
});

test('a packed batch reads back item for item, in its own transferable buffer', () => {
  const items = [item(0, 'DKLS'), item(1, 'ED25519'), item(2, 'DKLS')];
  const packed = packSignItems(items);
  assert.equal(packed.byteOffset, 0);
  assert.equal(packed.buffer.byteLength, packed.length);
  const read = unpackSignItems(packed).map((x) => ({ ...x, shares: [...x.shares], message: [...x.message] }));
  assert.deepEqual(
    read,
    items.map((x) => ({ ...x, shares: [...x.shares], message: [...x.message] })),
  );
  assert.deepEqual(unpackSignItems(packSignItems([])), []);
});

test('a malformed batch is refused, not read past its end', () => {
  const packed = packSignItems([item(1, 'DKLS'), item(2, 'ED25519')]);
  for (let cut = 0; cut < packed.length; cut += 7) {
    assert.throws(() => unpackSignItems(packed.subarray(0, cut)), /ends inside|packed sign batch/);
  }
  const longer = new Uint8Array(packed.length + 1);
  longer.set(packed);
  assert.throws(() => unpackSignItems(longer), /bytes after its last item/);
  const badScheme = packed.slice();
  badScheme[4] = 9;
  assert.throws(() => unpackSignItems(badScheme), /unknown scheme code 9/);
});
