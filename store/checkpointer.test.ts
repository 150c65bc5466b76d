import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createStore } from './index.ts';

test('with checkpoints off the event loop, the commits do not checkpoint and the worker keeps the WAL bounded', async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-ckpt-')), 'service.db');
  const store = createStore(file, { checkpointOffThread: true });
  assert.equal(store.sqlite.pragma('wal_autocheckpoint', { simple: true }), 0, 'the commits never checkpoint');
  const at = new Date().toISOString();
  const walPages = () => fs.statSync(`${file}-wal`).size / 4096;
  // Far more than SQLite's automatic threshold (1,000 pages) in the WAL between two checkpoints of the worker.
  for (let batch = 0; batch < 3; batch++) {
    await store.writer.write(() => {
      for (let i = 0; i < 2_000; i++) {
        store.outbox.append({ projectId: 'p', type: 'test.ping', createdAt: at, data: { pad: 'x'.repeat(2_000), i } });
      }
    });
  }
  assert.ok(walPages() > 1_000, `the WAL grew past the automatic threshold (${walPages()} pages)`);
  // The worker checkpoints within a second; the next commit then starts the WAL over from its beginning.
  await new Promise((r) => setTimeout(r, 1_500));
  const before = walPages();
  await store.writer.write(() => store.outbox.append({ projectId: 'p', type: 'test.ping', createdAt: at, data: {} }));
  // Frames in the WAL now (this call checkpoints them too, but reports how many there were).
  const [ck] = store.sqlite.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
  assert.ok(
    ck!.log < 100,
    `the WAL restarted after the worker's checkpoint: ${ck!.log} frames in use (was ${before} pages)`,
  );
  assert.equal(store.outbox.oldest(10_000).length, 6_001);
  store.close();
});

test('a checkpoint worker that cannot work reports it, so the store turns SQLite checkpoints back on', async () => {
  const { startCheckpointer } = await import('./checkpointer.ts');
  const failed = await new Promise<unknown>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no failure reported')), 10_000);
    startCheckpointer({
      file: path.join(os.tmpdir(), 'wcs-no-such-dir', 'nested', 'service.db'),
      everyMs: 10,
      onFailure: (err) => {
        clearTimeout(timer);
        resolve(err);
      },
    });
  });
  assert.ok(failed instanceof Error);
});
