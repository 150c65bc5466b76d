import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { masterKeyId } from './envelope.ts';
import { MASTER_KEY_ENV, MasterKeyError, masterKeyPath } from './master-key.ts';
import {
  createNextMasterKeyFile,
  loadStartKeys,
  MASTER_KEY_NEXT_ENV,
  nextMasterKeyPath,
  promoteNextMasterKeyFile,
} from './next-master-key.ts';

const dirs: string[] = [];
function enclaveDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'enclave-next-key-'));
  dirs.push(dir);
  const sub = join(dir, 'enclave');
  mkdirSync(sub, { mode: 0o700 });
  return sub;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const OLD = 'a1'.repeat(32);
const NEW = 'b2'.repeat(32);
const quiet = () => undefined;

describe('loadStartKeys', () => {
  test('an outside key takes its next key from ENCLAVE_MASTER_KEY_NEXT, then removes it from the environment', () => {
    const env: Record<string, string | undefined> = {
      [MASTER_KEY_ENV]: OLD,
      [MASTER_KEY_NEXT_ENV]: ` ${NEW.toUpperCase()}\n`,
    };
    const keys = loadStartKeys({ env, enclaveDir: enclaveDir(), keyStoreExists: true, log: quiet });
    assert.deepEqual(keys.master.key, new Uint8Array(32).fill(0xa1));
    assert.deepEqual(keys.next?.key, new Uint8Array(32).fill(0xb2));
    assert.deepEqual([keys.next?.id, keys.next?.source], [masterKeyId(new Uint8Array(32).fill(0xb2)), 'env']);
    assert.equal(MASTER_KEY_NEXT_ENV in env, false);
  });

  test('a next key equal to the master key is no next key', () => {
    const keys = loadStartKeys({
      env: { [MASTER_KEY_ENV]: OLD, [MASTER_KEY_NEXT_ENV]: OLD },
      enclaveDir: enclaveDir(),
      keyStoreExists: true,
      log: quiet,
    });
    assert.equal(keys.next, undefined);
  });

  test('refuses a malformed ENCLAVE_MASTER_KEY_NEXT, naming the variable and not echoing the value', () => {
    for (const value of ['', 'abc', NEW.slice(2), `${NEW}00`, `${NEW.slice(2)}zz`]) {
      assert.throws(
        () =>
          loadStartKeys({
            env: { [MASTER_KEY_ENV]: OLD, [MASTER_KEY_NEXT_ENV]: value },
            enclaveDir: enclaveDir(),
            keyStoreExists: true,
            log: quiet,
          }),
        (error: unknown) =>
          error instanceof MasterKeyError &&
          error.message.includes(MASTER_KEY_NEXT_ENV) &&
          (value.length < 8 || !error.message.includes(value)),
      );
    }
  });

  test('a file key takes master.key.next (0600 only) and refuses ENCLAVE_MASTER_KEY_NEXT', () => {
    const dir = enclaveDir();
    writeFileSync(masterKeyPath(dir), `${OLD}\n`, { mode: 0o600 });
    assert.equal(loadStartKeys({ env: {}, enclaveDir: dir, keyStoreExists: true, log: quiet }).next, undefined);
    writeFileSync(nextMasterKeyPath(dir), `${NEW}\n`, { mode: 0o600 });
    const keys = loadStartKeys({ env: {}, enclaveDir: dir, keyStoreExists: true, log: quiet });
    assert.deepEqual([keys.master.source, keys.next?.source], ['file', 'file']);
    assert.deepEqual(keys.next?.key, new Uint8Array(32).fill(0xb2));
    assert.throws(
      () => loadStartKeys({ env: { [MASTER_KEY_NEXT_ENV]: NEW }, enclaveDir: dir, keyStoreExists: true, log: quiet }),
      /ENCLAVE_MASTER_KEY_NEXT is set but the master key comes from/,
    );
    chmodSync(nextMasterKeyPath(dir), 0o640);
    assert.throws(
      () => loadStartKeys({ env: {}, enclaveDir: dir, keyStoreExists: true, log: quiet }),
      (error: unknown) => error instanceof MasterKeyError && /mode 640/.test(error.message),
    );
  });

  test('an outside key refuses a master.key.next beside it', () => {
    const dir = enclaveDir();
    writeFileSync(nextMasterKeyPath(dir), `${NEW}\n`, { mode: 0o600 });
    assert.throws(
      () => loadStartKeys({ env: { [MASTER_KEY_ENV]: OLD }, enclaveDir: dir, keyStoreExists: true, log: quiet }),
      /master\.key\.next exists but the master key is given from outside/,
    );
  });
});

describe('the next key file', () => {
  test('is created 0600 with a loud line naming its id (never the key), once, and promoted by a rename', () => {
    const dir = enclaveDir();
    writeFileSync(masterKeyPath(dir), `${OLD}\n`, { mode: 0o600 });
    const lines: string[] = [];
    const created = createNextMasterKeyFile(dir, (line) => lines.push(line));
    const path = nextMasterKeyPath(dir);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const text = readFileSync(path, 'utf8');
    assert.match(text, /^[0-9a-f]{64}\n$/);
    assert.deepEqual(Uint8Array.from(Buffer.from(text.trim(), 'hex')), created.key);
    assert.equal(created.id, masterKeyId(created.key));
    const output = lines.join('\n');
    assert.match(output, new RegExp(`NEW MASTER KEY \\(id ${created.id}\\)`));
    assert.match(output, /BACK IT UP/);
    assert.equal(output.includes(text.trim()), false);
    assert.throws(() => createNextMasterKeyFile(dir, quiet), /EEXIST/, 'never overwrites a next key');

    promoteNextMasterKeyFile(dir);
    assert.equal(existsSync(path), false);
    assert.equal(readFileSync(masterKeyPath(dir), 'utf8'), text);
    assert.equal(statSync(masterKeyPath(dir)).mode & 0o777, 0o600);
  });
});
