import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { unpackSealed } from './envelope.ts';
import { createKeyCache } from './key-cache.ts';
import type { StoredKey } from './key-store.ts';

const blob = (fill: number) => ({
  keyId: 'f00dfeedf00dfeed',
  wrapCipher: 2 as const,
  dataCipher: 1 as const,
  dekIv: new Uint8Array(12).fill(fill),
  wrappedKey: new Uint8Array(48).fill(fill),
  iv: new Uint8Array(12).fill(fill),
  ciphertext: new Uint8Array(48).fill(fill),
});

describe('key cache', () => {
  test('serves repeated reads from memory, evicts the least recently used, and reloads after invalidate', () => {
    const rows = new Map<string, StoredKey>();
    for (const id of ['a', 'b', 'c']) {
      rows.set(id, { walletId: id, scheme: 'DKLS', publicKey: `pk-${id}`, service: blob(1), user: blob(2) });
    }
    const loads: string[] = [];
    const cache = createKeyCache({
      capacity: 2,
      load: (walletId) => {
        loads.push(walletId);
        return rows.get(walletId);
      },
    });
    const a = cache.get('a')!;
    assert.equal(a.publicKey, 'pk-a');
    assert.equal(a.hasUserShare, true);
    assert.deepEqual(unpackSealed(a.shares), [blob(1), blob(2)]);
    cache.get('b');
    cache.get('a'); // a is now the most recently used
    cache.get('c'); // evicts b
    cache.get('a');
    cache.get('b');
    assert.deepEqual(loads, ['a', 'b', 'c', 'b']);
    assert.equal(cache.size, 2);

    assert.equal(cache.get('missing'), undefined);
    assert.equal(cache.get('missing'), undefined);
    assert.deepEqual(loads.slice(4), ['missing', 'missing'], 'absent keys are not cached');

    rows.set('p', { walletId: 'p', scheme: 'ED25519', publicKey: 'pk-p', service: blob(3) });
    assert.equal(cache.get('p')!.hasUserShare, false);
    assert.equal(unpackSealed(cache.get('p')!.shares).length, 1);
    rows.set('p', { walletId: 'p', scheme: 'ED25519', publicKey: 'pk-p', service: blob(3), user: blob(4) });
    assert.equal(cache.get('p')!.hasUserShare, false, 'cached until invalidated');
    cache.invalidate('p');
    assert.equal(cache.get('p')!.hasUserShare, true);
  });

  test('a row without its service share is an error, not a key', () => {
    const cache = createKeyCache({
      load: (walletId) => ({ walletId, scheme: 'DKLS', publicKey: 'pk' }),
    });
    assert.throws(() => cache.get('broken'), /no service share/);
  });
});
