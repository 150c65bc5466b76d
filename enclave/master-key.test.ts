import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadMasterKey, MASTER_KEY_ENV, MasterKeyError, masterKeyPath } from './master-key.ts';

const dirs: string[] = [];
function enclaveDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'enclave-master-'));
  dirs.push(dir);
  const sub = join(dir, 'enclave');
  mkdirSync(sub, { mode: 0o700 });
  return sub;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const HEX = 'a1'.repeat(32);

describe('loadMasterKey', () => {
  test('takes ENCLAVE_MASTER_KEY when set (surrounding whitespace allowed) and writes no file', () => {
    const dir = enclaveDir();
    const loaded = loadMasterKey({
      env: { [MASTER_KEY_ENV]: ` ${HEX.toUpperCase()}\n` },
      enclaveDir: dir,
      keyStoreExists: true,
    });
    assert.equal(loaded.source, 'env');
    assert.deepEqual(loaded.key, new Uint8Array(32).fill(0xa1));
    assert.throws(() => statSync(masterKeyPath(dir)));
  });

  test('refuses a malformed ENCLAVE_MASTER_KEY, naming the variable and not echoing the value', () => {
    for (const value of ['', 'abc', HEX.slice(2), `${HEX}00`, `${HEX.slice(2)}zz`, '0x' + HEX.slice(2)]) {
      assert.throws(
        () => loadMasterKey({ env: { [MASTER_KEY_ENV]: value }, enclaveDir: enclaveDir(), keyStoreExists: false }),
        (error: unknown) =>
          error instanceof MasterKeyError &&
          error.message.includes('ENCLAVE_MASTER_KEY') &&
          (value.length < 8 || !error.message.includes(value)),
      );
    }
  });

  test('creates the key file (0600) at first start with a loud backup line, then reuses it', () => {
    const dir = enclaveDir();
    const lines: string[] = [];
    const first = loadMasterKey({ env: {}, enclaveDir: dir, keyStoreExists: false, log: (line) => lines.push(line) });
    assert.equal(first.created, true);
    const path = masterKeyPath(dir);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match(readFileSync(path, 'utf8'), /^[0-9a-f]{64}\n$/);
    const output = lines.join('\n');
    assert.match(output, /BACK IT UP/);
    assert.ok(output.includes(path));
    assert.equal(output.includes(Buffer.from(first.key).toString('hex')), false, 'the key is never printed');

    const second = loadMasterKey({ env: {}, enclaveDir: dir, keyStoreExists: true, log: (line) => lines.push(line) });
    assert.equal(second.created, false);
    assert.deepEqual(second.key, first.key);
  });

  test('refuses a key file with bad content, naming the file', () => {
    const dir = enclaveDir();
    writeFileSync(masterKeyPath(dir), 'not a key\n', { mode: 0o600 });
    assert.throws(
      () => loadMasterKey({ env: {}, enclaveDir: dir, keyStoreExists: true }),
      (error: unknown) => error instanceof MasterKeyError && error.message.includes(masterKeyPath(dir)),
    );
  });

  test('will not create a new key next to an existing key store', () => {
    assert.throws(
      () => loadMasterKey({ env: {}, enclaveDir: enclaveDir(), keyStoreExists: true }),
      (error: unknown) => error instanceof MasterKeyError && /restore .*master\.key/.test(error.message),
    );
  });
});
