import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { createEnclaveClient } from '../enclave/client.ts';
import { ROOT, startTestService, tempDataDir } from './helpers/service.ts';

const run = promisify(execFile);
// The platform binary itself: the npm wrapper (node_modules/.bin/litestream) runs it with spawnSync, so a
// signal to the wrapper would leave the replicator running.
const LITESTREAM = path.join(ROOT, `node_modules/@flydotio/litestream-${process.platform}-${process.arch}/litestream`);

test('the documented backup and restore: litestream replicas of both databases plus the master key kept apart', async () => {
  const dataDir = tempDataDir();
  const backupDir = tempDataDir('wcs-backup-');
  const env = { ...process.env, DATA_DIR: dataDir, BACKUP_DIR: backupDir };
  const svc = await startTestService({}, { dataDir });
  let replicator: ChildProcess | undefined;
  try {
    replicator = spawn(LITESTREAM, ['replicate', '-config', path.join(ROOT, 'litestream.yml')], {
      env,
      stdio: 'ignore',
    });
    const partner = await svc.newPartner();
    const wallets: Array<{ id: string; address: string; type: string }> = [];
    for (const type of ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI']) {
      const r = await svc.v1(partner.secret, 'POST', '/wallets', {
        type,
        userIdentifier: `backup-${type}`,
        userIdentifierType: 'CUSTOM_ID',
      });
      assert.equal(r.status, 201);
      wallets.push(r.body);
    }
    // Let litestream ship the WAL (sync-interval 1s), then stop the service and the replicator.
    await new Promise((r) => setTimeout(r, 2500));
    await svc.stop({ keepData: true });
    await new Promise<void>((resolve) => {
      replicator!.once('exit', () => resolve());
      process.kill(replicator!.pid!, 'SIGTERM');
    });

    // The master key is backed up apart; then the machine "loses" its data directory.
    const masterKey = fs.readFileSync(path.join(dataDir, 'enclave/master.key'));
    fs.rmSync(dataDir, { recursive: true, force: true });
    for (const db of ['service.db', 'enclave/keys.db']) {
      await run(LITESTREAM, ['restore', '-config', path.join(ROOT, 'litestream.yml'), path.join(dataDir, db)], { env });
    }
    assert.equal(
      fs.existsSync(path.join(dataDir, 'enclave/master.key')),
      false,
      'the replica never holds the master key',
    );
    fs.writeFileSync(path.join(dataDir, 'enclave/master.key'), masterKey, { mode: 0o600 });

    const restored = await startTestService({}, { dataDir });
    try {
      for (const w of wallets) {
        const r = await restored.v1(partner.secret, 'GET', `/wallets/${w.id}`);
        assert.equal(r.status, 200, 'the partner key and the wallet survived');
        assert.equal(r.body.address, w.address);
      }
      const client = createEnclaveClient({ socketPath: restored.config.enclaveSocket });
      await client.connect();
      try {
        for (const w of wallets) {
          const scheme = w.type === 'EVM' || w.type === 'COSMOS' ? 'DKLS' : 'ED25519';
          const k = await client.generateKey({ walletId: w.id, scheme });
          assert.equal(k.created, false, `the key of ${w.type} wallet ${w.id} was restored`);
        }
      } finally {
        await client.close();
      }
    } finally {
      await restored.stop();
    }
  } finally {
    if (replicator && replicator.exitCode === null && replicator.signalCode === null) replicator.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(backupDir, { recursive: true, force: true });
  }
});
