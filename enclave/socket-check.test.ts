import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { checkEnclaveSocket, resolveUid, type SocketCheck, socketOwners } from './socket-check.ts';

const root = mkdtempSync(join(tmpdir(), 'socket-check-'));
const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  rmSync(root, { recursive: true, force: true });
});

let count = 0;
/** A fresh directory (mode `mode`) under the test root, holding a listening socket `s.sock`. */
async function socketIn(mode: number, parent = root): Promise<{ dir: string; path: string }> {
  const dir = join(parent, `d${count++}`);
  mkdirSync(dir);
  chmodSync(dir, mode);
  const path = join(dir, 's.sock');
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chmodSync(path, 0o600);
  return { dir, path };
}

const owners = socketOwners();
const refused = (check: SocketCheck, pattern: RegExp): void => {
  assert.equal(check.ok, false);
  if (!check.ok) {
    assert.equal(check.missing, false);
    assert.match(check.problem, pattern);
  }
};

describe('enclave socket checks', () => {
  test('a socket in a directory only its owner writes passes (under a sticky /tmp)', async () => {
    const { path } = await socketIn(0o700);
    assert.deepEqual(checkEnclaveSocket(path, owners), { ok: true });
    const { path: groupShared } = await socketIn(0o750);
    assert.deepEqual(checkEnclaveSocket(groupShared, owners), { ok: true });
  });

  test('nothing there yet is "missing", not a refusal', () => {
    const check = checkEnclaveSocket(join(root, 'absent', 's.sock'), owners);
    assert.equal(check.ok, false);
    assert.equal(!check.ok && check.missing, true);
  });

  test('a directory others may write is refused, sticky or not, group or world', async () => {
    for (const mode of [0o777, 0o1777, 0o770, 0o1730]) {
      const { path } = await socketIn(mode);
      refused(checkEnclaveSocket(path, owners), /is writable by other users/);
    }
  });

  test('a world-writable directory higher up is refused; a sticky one (like /tmp) is not', async () => {
    const open = join(root, `open${count++}`);
    mkdirSync(open);
    chmodSync(open, 0o777);
    const { path } = await socketIn(0o700, open);
    refused(checkEnclaveSocket(path, owners), new RegExp(`${open} \\(mode 0777\\)`));
    chmodSync(open, 0o1777);
    assert.deepEqual(checkEnclaveSocket(path, owners), { ok: true });
  });

  test('a directory reached through a symlink is checked where it really is', async () => {
    const { dir } = await socketIn(0o777);
    const link = join(root, `link${count++}`);
    symlinkSync(dir, link);
    refused(checkEnclaveSocket(join(link, 's.sock'), owners), /is writable by other users/);
  });

  test('a symlink to a socket, a regular file, a world-writable socket are refused', async () => {
    const { dir, path } = await socketIn(0o700);
    const link = join(dir, 'link.sock');
    symlinkSync(path, link);
    refused(checkEnclaveSocket(link, owners), /symbolic link/);
    const file = join(dir, 'file.sock');
    writeFileSync(file, '');
    refused(checkEnclaveSocket(file, owners), /is not a socket/);
    chmodSync(path, 0o666);
    refused(checkEnclaveSocket(path, owners), /writable by every user/);
  });

  test('a socket or a directory owned by another user than the expected one is refused', async () => {
    const { path } = await socketIn(0o700);
    const me = process.getuid!();
    refused(checkEnclaveSocket(path, { socket: [me + 1], directories: [0, me] }), new RegExp(`owned by uid ${me}`));
    // A directory on the way owned by another user (root can hand one over; others test with no user accepted).
    const { dir, path: inForeignDir } = await socketIn(0o700);
    if (me === 0) {
      chownSync(dir, 65534, 65534);
      refused(checkEnclaveSocket(inForeignDir, owners), new RegExp(`${dir} is owned by uid 65534`));
    } else {
      refused(checkEnclaveSocket(inForeignDir, { socket: [me], directories: [] }), /is owned by uid/);
    }
    // With ENCLAVE_USER known, that uid and no other owns the socket.
    assert.deepEqual(checkEnclaveSocket(path, socketOwners(me)), { ok: true });
    refused(checkEnclaveSocket(path, socketOwners(me + 1)), new RegExp(`expected uid ${me + 1}`));
  });

  test('ENCLAVE_USER resolves names and numbers through the user database', () => {
    assert.equal(resolveUid('root'), 0);
    assert.equal(resolveUid('1234'), 1234);
    assert.equal(resolveUid('no-such-user-wcs'), undefined);
  });
});
