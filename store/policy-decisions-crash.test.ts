/**
 * The decision log across a SIGKILL: a child process writes batches of queued decisions and single rows through the
 * group-commit writer, as fast as it can, and is killed mid-stream. Reopened, the log must hold every write the child
 * saw resolve (resolved = committed and fsynced), no batch in part, one number per decision across both tables, and a
 * sequence that goes on after the largest number (a batch moves `sqlite_sequence` in the transaction that inserts it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createStore } from './index.ts';
import { DecisionBatch, type LoggedDecision } from './policy-decisions-repo.ts';

const CHILD = 'DECISION_LOG_CRASH_CHILD';
const KEY = 'key-1';

function decision(at: number, i: number): LoggedDecision {
  const reference = `body:w-1:sign-message:${at}-${i}`;
  return {
    apiKeyId: KEY,
    walletId: 'w-1',
    reference,
    spendRef: reference,
    action: 'sign_message',
    effect: 'allow',
    reason: null,
    policyId: null,
    ruleId: null,
    holdId: null,
    request: JSON.stringify({ wallet: { id: 'w-1', type: 'EVM' }, at, i }),
    trace: '{"policies":[],"facts":{},"spend":[]}',
    decidedAt: at,
  };
}

if (process.env[CHILD]) {
  // The child: writes until killed, and says on stdout what each resolved write numbered.
  const store = createStore(process.env[CHILD], { checkpointOffThread: true });
  for (let n = 0; ; n++) {
    const at = Date.now();
    const writes: Array<Promise<string>> = [];
    for (let w = 0; w < 8; w++) {
      if (w === 3) {
        writes.push(store.writer.write(() => `row ${store.policyDecisions.append(decision(at, n * 1000 + w))} 1`));
        continue;
      }
      const batch = new DecisionBatch(KEY, 256);
      for (let i = 0; i < 40; i++) batch.add(decision(at, n * 1000 + w * 50 + i));
      writes.push(store.writer.write(() => `batch ${store.policyDecisions.appendBatch(batch)} ${batch.count}`));
    }
    for (const line of await Promise.all(writes)) process.stdout.write(`${line}\n`);
  }
} else {
  test('a SIGKILL while batches are written: every resolved write is there whole, and the numbering goes on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-decision-crash-'));
    const file = path.join(dir, 'service.db');
    createStore(file).close(); // migrated before the child starts
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      env: { ...process.env, [CHILD]: file },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const resolved: Array<{ first: number; count: number }> = [];
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += String(d);
        const lines = out.split('\n');
        out = lines.pop()!;
        for (const line of lines) {
          const [, first, count] = line.split(' ');
          resolved.push({ first: Number(first), count: Number(count) });
        }
        // Killed while it keeps writing: some write is most likely between its BEGIN and its fsync.
        if (resolved.length >= 200) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        if (signal !== 'SIGKILL') reject(new Error(`the child stopped by itself (${code})`));
      });
    });
    await new Promise((resolve) => child.once('close', resolve));

    const store = createStore(file);
    try {
      const log = store.policyDecisions.between(KEY, 0, Number.MAX_SAFE_INTEGER, 1_000_000);
      const seqs = new Set(log.map((r) => r.seq));
      assert.equal(seqs.size, log.length, 'one number a decision');
      // Every write the child saw resolve is there, each of its numbers.
      for (const { first, count } of resolved) {
        for (let s = first; s < first + count; s++) assert.ok(seqs.has(s), `decision ${s} was acknowledged and lost`);
      }
      // No batch in part: what the table says each batch holds is what is read.
      const batches = store.sqlite
        .prepare('select first_seq as first, count from policy_decision_batches')
        .all() as Array<{ first: number; count: number }>;
      const rows = store.sqlite.prepare('select count(*) as n from policy_decisions').get() as { n: number };
      assert.equal(log.length, batches.reduce((n, b) => n + b.count, 0) + rows.n);
      for (const b of batches) {
        for (let s = b.first; s < b.first + b.count; s++) assert.ok(seqs.has(s));
      }
      // The sequence goes on after the largest number, for a row and for a batch.
      const max = Math.max(...seqs);
      const next = await store.writer.write(() => store.policyDecisions.append(decision(Date.now(), 0)));
      assert.equal(next, max + 1);
      const batch = new DecisionBatch(KEY);
      batch.add(decision(Date.now(), 1));
      assert.equal(await store.writer.write(() => store.policyDecisions.appendBatch(batch)), max + 2);
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
