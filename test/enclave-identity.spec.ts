/**
 * The API knows it talks to the real enclave: an impostor process on the socket, a socket in a directory others
 * may write, and the operator's re-pin after a deliberate enclave move. One appliance for the whole file.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeArgs } from './helpers/entry.ts';
import { spawnFakeEnclave } from './helpers/fake-enclave-process.ts';
import {
  type Partner,
  ROOT,
  startEnclaveProcess,
  startTestService,
  stopProcess,
  type TestService,
} from './helpers/service.ts';

let svc: TestService;
let partner: Partner;
const lines: string[] = [];

before(async () => {
  svc = await startTestService({}, { api: { enclaveLog: (line) => lines.push(line) } });
  partner = await svc.newPartner();
});
after(() => svc?.stop());

let walletCount = 0;
const createWallet = () =>
  svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `identity-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });

const walletTotal = async (): Promise<number> =>
  (await svc.v1(partner.secret, 'GET', '/wallets?limit=100')).body.data.length;

/** Runs `npm run admin -- …` as the operator would (same environment as the API), answering its exit code and output. */
function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      nodeArgs('bin/admin', ...args),
      {
        cwd: ROOT,
        env: { ...process.env, DATA_DIR: svc.dataDir, ENCLAVE_SOCKET: svc.config.enclaveSocket, ADMIN_TOKEN: '' },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; log:\n${lines.join('\n')}`);
    await sleep(50);
  }
}

const pinFile = () => path.join(svc.dataDir, 'enclave-pin.json');
const pinned = (): string => JSON.parse(readFileSync(pinFile(), 'utf8')).fingerprint;

async function assertRefusedService(): Promise<void> {
  const before = await walletTotal();
  const created = await createWallet();
  assert.equal(created.status, 503, JSON.stringify(created.body));
  assert.equal(created.body.code, 'ENCLAVE_UNAVAILABLE');
  assert.equal(created.headers.get('retry-after'), '1');
  const ready = await fetch(`${svc.url}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(((await ready.json()) as { checks: { enclave: boolean } }).checks.enclave, false);
  assert.equal(await walletTotal(), before, 'no wallet was created');
}

describe('enclave identity', () => {
  test('the first start pins the enclave in a 0600 file; the CLI shows the pin and the enclave agree', async () => {
    assert.equal(statSync(pinFile()).mode & 0o777, 0o600);
    assert.ok(
      lines.some((line) => line.includes(`identity ${pinned()} pinned`)),
      lines.join('\n'),
    );
    const shown = await admin('enclave-identity', '--json');
    assert.equal(shown.code, 0, shown.stderr);
    const body = JSON.parse(shown.stdout);
    assert.equal(body.pinned.fingerprint, pinned());
    assert.equal(body.presented, pinned());
    assert.equal(body.matches, true);
    assert.equal((await createWallet()).status, 201);
  });

  test('an impostor process on the socket while the enclave is down is refused; the real enclave is served again', async () => {
    const original = pinned();
    lines.length = 0;
    await stopProcess(svc.enclave, 'SIGKILL');
    const impostor = await spawnFakeEnclave(svc.config.enclaveSocket);
    try {
      await until(
        () => lines.some((line) => line.includes(impostor.fingerprint) && line.includes(original)),
        'the refusal naming both fingerprints',
      );
      await assertRefusedService();
      await sleep(2500);
      assert.equal(lines.length, 1, `one log line, not one per retry:\n${lines.join('\n')}`);
      assert.ok(impostor.ops().filter((op) => op === 'hello').length >= 2, 'the API kept retrying');
      assert.deepEqual(new Set(impostor.ops()), new Set(['hello']), 'the impostor received nothing but hello');
    } finally {
      await impostor.stop();
    }
    await svc.restartEnclave();
    await svc.waitReady(10_000);
    assert.ok(
      lines.some((line) => line.includes(`identity ${original} verified`)),
      lines.join('\n'),
    );
    assert.equal((await createWallet()).status, 201);
    assert.equal(pinned(), original, 'the pin never moved');
  });

  test('a socket in a directory others may write is refused until the directory is fixed', async () => {
    lines.length = 0;
    const dir = path.dirname(svc.config.enclaveSocket);
    const mode = statSync(dir).mode & 0o7777;
    try {
      chmodSync(dir, 0o1777);
      await svc.restartEnclave();
      await until(() => lines.some((line) => line.includes('is writable by other users')), 'the socket check refusal');
      await assertRefusedService();
    } finally {
      chmodSync(dir, mode);
    }
    await svc.waitReady(10_000);
    assert.equal((await createWallet()).status, 201);
  });

  test('after a deliberate enclave move the operator re-pins at the terminal; a wrong fingerprint changes nothing', async () => {
    const original = pinned();
    lines.length = 0;
    // Another enclave (its own store, so its own identity key) now answers on the API's socket.
    const otherDir = mkdtempSync(path.join(tmpdir(), 'wcs-moved-'));
    await stopProcess(svc.enclave);
    const moved = await startEnclaveProcess(otherDir, { ENCLAVE_SOCKET: svc.config.enclaveSocket });
    try {
      await until(() => lines.length > 0, 'the refusal');
      const presented = /presented identity ([0-9a-f]{64})/.exec(lines[0]!)?.[1];
      assert.ok(presented && presented !== original, lines[0]);
      await assertRefusedService();

      const shown = await admin('enclave-identity');
      assert.equal(shown.code, 1);
      assert.match(shown.stdout, new RegExp(`pinned +${original}`));
      assert.match(shown.stdout, new RegExp(`enclave +${presented}`));
      assert.match(shown.stdout, /do NOT match/);

      const wrong = await admin('pin-enclave', 'f'.repeat(64));
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /nothing changed/);
      assert.equal(pinned(), original);

      const repin = await admin('pin-enclave', presented);
      assert.equal(repin.code, 0, repin.stderr);
      assert.equal(pinned(), presented);
      assert.equal(statSync(pinFile()).mode & 0o777, 0o600);
      // The running API takes the new pin at its next attempt: no restart.
      await svc.waitReady(10_000);
      assert.equal((await createWallet()).status, 201);
    } finally {
      await stopProcess(moved);
      rmSync(otherDir, { recursive: true, force: true });
    }
  });
});
