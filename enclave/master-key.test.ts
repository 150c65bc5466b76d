import assert from 'node:assert/strict';
import {
  chmodSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadMasterKey, MASTER_KEY_ENV, MasterKeyError, masterKeyPath } from './master-key.ts';
import { LooseModeError } from './private-file.ts';
import { SecretSourceError } from './secret-source.ts';

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

  test('removes ENCLAVE_MASTER_KEY from the environment it was read from', () => {
    const env: Record<string, string | undefined> = { [MASTER_KEY_ENV]: HEX, OTHER: 'kept' };
    loadMasterKey({ env, enclaveDir: enclaveDir(), keyStoreExists: false });
    assert.deepEqual(env, { OTHER: 'kept' });
  });

  test('reads ENCLAVE_MASTER_KEY_FD to its end, closes the descriptor and removes the variable', () => {
    const dir = enclaveDir();
    const file = join(dir, '..', 'key-on-a-descriptor');
    writeFileSync(file, `${HEX}\n`, { mode: 0o600 });
    const fd = openSync(file, 'r');
    const env: Record<string, string | undefined> = { ENCLAVE_MASTER_KEY_FD: String(fd) };
    const loaded = loadMasterKey({ env, enclaveDir: dir, keyStoreExists: true });
    assert.equal(loaded.source, 'fd');
    assert.deepEqual(loaded.key, new Uint8Array(32).fill(0xa1));
    assert.deepEqual(env, {});
    assert.throws(() => fstatSync(fd), /EBADF/, 'the descriptor is closed');
    assert.throws(() => statSync(masterKeyPath(dir)), 'no key file is written');
  });

  test('reads the systemd credential enclave-master-key from $CREDENTIALS_DIRECTORY', () => {
    const dir = enclaveDir();
    const credentials = join(dir, '..', 'credentials');
    mkdirSync(credentials);
    writeFileSync(join(credentials, 'enclave-master-key'), HEX, { mode: 0o400 });
    const loaded = loadMasterKey({
      env: { CREDENTIALS_DIRECTORY: credentials },
      enclaveDir: dir,
      keyStoreExists: true,
    });
    assert.equal(loaded.source, 'credential');
    assert.deepEqual(loaded.key, new Uint8Array(32).fill(0xa1));
  });

  test('a malformed key from a descriptor is refused naming the variable, not echoing the value', () => {
    const dir = enclaveDir();
    const file = join(dir, '..', 'bad-key');
    writeFileSync(file, 'zz'.repeat(32), { mode: 0o600 });
    const fd = openSync(file, 'r');
    assert.throws(
      () => loadMasterKey({ env: { ENCLAVE_MASTER_KEY_FD: String(fd) }, enclaveDir: dir, keyStoreExists: false }),
      (error: unknown) =>
        error instanceof MasterKeyError &&
        error.message.includes(`file descriptor ${fd} from ENCLAVE_MASTER_KEY_FD`) &&
        !error.message.includes('zz'.repeat(32)),
    );
  });

  test('refuses a bad ENCLAVE_MASTER_KEY_FD, and two sources at once', () => {
    for (const fd of ['x', '-1', '3.5', '']) {
      assert.throws(
        () => loadMasterKey({ env: { ENCLAVE_MASTER_KEY_FD: fd }, enclaveDir: enclaveDir(), keyStoreExists: false }),
        (error: unknown) => error instanceof SecretSourceError && /ENCLAVE_MASTER_KEY_FD must be/.test(error.message),
      );
    }
    // A descriptor that is not open (far above any this process has).
    assert.throws(
      () =>
        loadMasterKey({ env: { ENCLAVE_MASTER_KEY_FD: '999999' }, enclaveDir: enclaveDir(), keyStoreExists: false }),
      (error: unknown) => error instanceof SecretSourceError && /EBADF/.test(error.message),
    );
    assert.throws(
      () =>
        loadMasterKey({
          env: { [MASTER_KEY_ENV]: HEX, ENCLAVE_MASTER_KEY_FD: '0' },
          enclaveDir: enclaveDir(),
          keyStoreExists: false,
        }),
      (error: unknown) =>
        error instanceof SecretSourceError &&
        error.message.includes('ENCLAVE_MASTER_KEY, ENCLAVE_MASTER_KEY_FD') &&
        !error.message.includes(HEX),
    );
  });

  test('refuses a key file that its group or others may read, naming the file and the fix', () => {
    for (const mode of [0o640, 0o604, 0o660, 0o644]) {
      const dir = enclaveDir();
      const path = masterKeyPath(dir);
      writeFileSync(path, `${HEX}\n`, { mode: 0o600 });
      chmodSync(path, mode);
      assert.throws(
        () => loadMasterKey({ env: {}, enclaveDir: dir, keyStoreExists: true }),
        (error: unknown) =>
          error instanceof LooseModeError &&
          error.message.includes(path) &&
          error.message.includes(`chmod 600 ${path}`) &&
          !error.message.includes(HEX),
      );
    }
    const dir = enclaveDir();
    writeFileSync(masterKeyPath(dir), `${HEX}\n`, { mode: 0o400 });
    assert.equal(loadMasterKey({ env: {}, enclaveDir: dir, keyStoreExists: true }).source, 'file');
  });
});
