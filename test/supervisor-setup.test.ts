/**
 * The supervisor's own settings: ENCLAVE_USER / API_USER and the guards of the data directory's preparation
 * (which refuse before changing anything). The preparation itself, as root, is in privilege-separation.spec.ts.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DataDirError, prepareDataDir } from '../bin/supervisor/data-dir.ts';
import { OsUserError, resolveOsUser } from '../bin/supervisor/os-user.ts';
import { tempDataDir } from './helpers/service.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('ENCLAVE_USER / API_USER', () => {
  test('a user name is looked up in the user database', () => {
    const root = resolveOsUser('ENCLAVE_USER', 'root');
    assert.equal(root.uid, 0);
    assert.equal(root.gid, 0);
    assert.equal(root.label, 'root (uid 0)');
  });

  test('a numeric uid[:gid] needs no entry; the gid defaults to the uid then', () => {
    assert.deepEqual(resolveOsUser('API_USER', '4242000:4242001'), {
      uid: 4242000,
      gid: 4242001,
      label: 'uid 4242000',
    });
    assert.deepEqual(resolveOsUser('API_USER', '4242000'), { uid: 4242000, gid: 4242000, label: 'uid 4242000' });
    assert.equal(resolveOsUser('API_USER', '0').label, 'root (uid 0)');
  });

  test('an unknown name or a malformed value is refused, naming the variable', () => {
    for (const value of ['no-such-user-4242', 'two words', '12:ab', '-1', '1:2:3', '99999999999']) {
      assert.throws(
        () => resolveOsUser('ENCLAVE_USER', value),
        (error: unknown) => error instanceof OsUserError && error.message.startsWith('ENCLAVE_USER'),
        value,
      );
    }
  });
});

describe('preparing the data directory refuses what would break the separation', () => {
  const someone = { uid: 4242000, gid: 4242000, label: 'uid 4242000' };
  const other = { uid: 4242001, gid: 4242001, label: 'uid 4242001' };

  test('a data directory that holds the code', () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const codeDir = join(dataDir, 'app');
    mkdirSync(codeDir);
    assert.throws(
      () =>
        prepareDataDir({ dataDir, socketPath: join(dataDir, 's', 'e.sock'), codeDir, enclave: someone, api: other }),
      (error: unknown) => error instanceof DataDirError && /holds the service's code/.test(error.message),
    );
  });

  test('a socket directly in the data directory or inside the enclave directory', () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    for (const socketPath of [join(dataDir, 'enclave.sock'), join(dataDir, 'enclave', 'x', 'enclave.sock')]) {
      assert.throws(
        () => prepareDataDir({ dataDir, socketPath, codeDir: '/nonexistent-code', enclave: someone, api: other }),
        (error: unknown) => error instanceof DataDirError && /directory of its own/.test(error.message),
      );
    }
  });

  test('a data directory one of the users cannot reach, naming the directory in the way', () => {
    const closed = tempDataDir(); // 0700, this process's own
    dirs.push(closed);
    const dataDir = join(closed, 'data');
    // Code both users can read, wherever the repository itself is checked out.
    const codeDir = tempDataDir();
    dirs.push(codeDir);
    chmodSync(codeDir, 0o755);
    assert.throws(
      () =>
        prepareDataDir({
          dataDir,
          socketPath: join(dataDir, 'socket', 'enclave.sock'),
          codeDir,
          enclave: someone,
          api: other,
        }),
      (error: unknown) =>
        error instanceof DataDirError &&
        error.message.startsWith('ENCLAVE_USER (uid 4242000) cannot reach the data directory') &&
        error.message.includes(`${closed} is mode 0700`),
    );
    assert.equal(existsSync(dataDir), false, 'nothing was created');
  });
});
