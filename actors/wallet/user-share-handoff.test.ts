import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { createUserShareHandoff, DEFAULT_USER_SHARE_TTL_MS } from './user-share-handoff.ts';

describe('user share handoff', () => {
  test('a share is taken once', () => {
    const handoff = createUserShareHandoff();
    handoff.put('w-1', 'share-1');
    assert.equal(handoff.take('w-1'), 'share-1');
    assert.equal(handoff.take('w-1'), undefined);
    assert.equal(handoff.take('never-put'), undefined);
    assert.equal(handoff.size, 0);
  });

  test('a share nobody takes is dropped at its deadline; one taken before it is not affected', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const handoff = createUserShareHandoff();
      handoff.put('untaken', 'share-a');
      handoff.put('taken', 'share-b');
      mock.timers.tick(DEFAULT_USER_SHARE_TTL_MS - 1);
      assert.equal(handoff.take('taken'), 'share-b', 'still there just before the deadline');
      assert.equal(handoff.size, 1);
      mock.timers.tick(1);
      assert.equal(handoff.size, 0, 'dropped at the deadline');
      assert.equal(handoff.take('untaken'), undefined);
    } finally {
      mock.timers.reset();
    }
  });

  test('a second put for a wallet replaces the first and restarts its deadline', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const handoff = createUserShareHandoff({ ttlMs: 1000 });
      handoff.put('w', 'first');
      mock.timers.tick(600);
      handoff.put('w', 'second');
      mock.timers.tick(600);
      assert.equal(handoff.take('w'), 'second', 'the first put’s timer did not drop the second share');
      handoff.put('w', 'third');
      mock.timers.tick(1000);
      assert.equal(handoff.take('w'), undefined);
    } finally {
      mock.timers.reset();
    }
  });
});
