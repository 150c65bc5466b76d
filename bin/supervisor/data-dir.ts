/**
 * Ownership and modes of the data directory when the supervisor, started as root, runs the enclave and the
 * API as two OS users. Prepared before either child starts, so a data directory that one user (or root) used
 * before is taken over as is:
 *
 * ```
 * $DATA_DIR/            enclave user, API group, 1770: the API creates its files; the sticky bit keeps it
 *                       from renaming or removing what it does not own (the enclave's directories)
 *   enclave/            enclave user and group, 0700, with everything in it (keys.db*, master.key)
 *   socket/             enclave user, API group, 2750: the setgid bit gives the socket (0660) the API's group
 *   everything else     API user and group (service.db*, admin-token, …)
 * ```
 *
 * File modes inside `enclave/` are not changed: the enclave refuses key files with loose modes itself, so an
 * operator learns that a key file was exposed instead of having it silently fixed.
 */
import { chmodSync, chownSync, lchownSync, lstatSync, mkdirSync, readdirSync, type Stats, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { InternalError } from '../../chains/domain/errors.ts';
import { octalMode, SOCKET_DIR_NAME } from '../../enclave/public.ts';
import type { OsUser } from './os-user.ts';

/** The data directory cannot be prepared for two users; the message says why and what to change. */
export class DataDirError extends InternalError {
  override name = 'DataDirError';
  constructor(message: string) {
    super('DATA_DIR_INVALID', message);
  }
}

const X = 1;
const R = 4;

/** Whether `user` (its uid and primary group: the children run without supplementary groups) has `bits` on it. */
function permits(st: Stats, user: OsUser, bits: number): boolean {
  if (user.uid === 0) return true;
  const shift = st.uid === user.uid ? 6 : st.gid === user.gid ? 3 : 0;
  return ((st.mode >> shift) & bits) === bits;
}

/** Throws unless `user` can reach `dir` (search every ancestor) and, with `bits`, use `dir` itself. */
export function assertReachable(dir: string, user: OsUser, variable: string, what: string, bits = 0): void {
  const target = resolve(dir);
  let current = dirname(target);
  const ancestors: string[] = [];
  for (;;) {
    ancestors.unshift(current);
    const up = dirname(current);
    if (up === current) break;
    current = up;
  }
  for (const ancestor of ancestors) {
    const st = statSync(ancestor);
    if (!permits(st, user, X)) {
      throw new DataDirError(
        `${variable} (${user.label}) cannot reach ${what} ${target}: ${ancestor} is mode ${octalMode(st.mode)}, ` +
          `owner uid ${st.uid}. Move it, or let that user through (chmod o+x ${ancestor}).`,
      );
    }
  }
  if (bits !== 0 && !permits(statSync(target), user, bits)) {
    throw new DataDirError(`${variable} (${user.label}) cannot read ${what} ${target}`);
  }
}

/** True when `dir` is `parent` or inside it. */
function inside(dir: string, parent: string): boolean {
  const rel = relative(parent, dir);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** chown of a tree, never following symbolic links, touching only what differs. */
function chownTree(path: string, uid: number, gid: number): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) {
    if (st.uid !== uid || st.gid !== gid) lchownSync(path, uid, gid);
    return;
  }
  if (st.uid !== uid || st.gid !== gid) chownSync(path, uid, gid);
  if (st.isDirectory()) for (const name of readdirSync(path)) chownTree(join(path, name), uid, gid);
}

function ensureDir(path: string, uid: number, gid: number, mode: number): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const st = lstatSync(path);
  if (!st.isDirectory()) throw new DataDirError(`${path} is not a directory`);
  if (st.uid !== uid || st.gid !== gid) chownSync(path, uid, gid);
  if ((st.mode & 0o7777) !== mode) chmodSync(path, mode);
}

/**
 * Prepares `dataDir` (and the socket's directory) for the enclave and the API running as `enclave` and `api`,
 * and checks that both users can reach it and the service's code in `codeDir`.
 */
export function prepareDataDir(options: {
  dataDir: string;
  socketPath: string;
  codeDir: string;
  enclave: OsUser;
  api: OsUser;
}): void {
  const { enclave, api } = options;
  const dataDir = resolve(options.dataDir);
  const enclaveDir = join(dataDir, 'enclave');
  const socketDir = dirname(resolve(options.socketPath));
  const defaultSocketDir = join(dataDir, SOCKET_DIR_NAME);

  if (inside(resolve(options.codeDir), dataDir)) {
    throw new DataDirError(`DATA_DIR ${dataDir} holds the service's code: give the data a directory of its own`);
  }
  if (socketDir === dataDir || inside(socketDir, enclaveDir)) {
    throw new DataDirError(
      `ENCLAVE_SOCKET ${options.socketPath} must be in a directory of its own when the enclave and the API run ` +
        `as two users (the default is ${join(defaultSocketDir, 'enclave.sock')})`,
    );
  }

  for (const [variable, user] of [
    ['ENCLAVE_USER', enclave],
    ['API_USER', api],
  ] as const) {
    assertReachable(options.codeDir, user, variable, "the service's code", R | X);
  }

  // Missing ancestors are made searchable (0755): the children must be able to walk down to the data directory.
  mkdirSync(dirname(dataDir), { recursive: true, mode: 0o755 });
  for (const [variable, user] of [
    ['ENCLAVE_USER', enclave],
    ['API_USER', api],
  ] as const) {
    assertReachable(dataDir, user, variable, 'the data directory');
  }
  ensureDir(dataDir, enclave.uid, api.gid, 0o1770);

  ensureDir(enclaveDir, enclave.uid, enclave.gid, 0o700);
  chownTree(enclaveDir, enclave.uid, enclave.gid);

  // A socket directory the operator chose and made is theirs to set up (docs/operations.md: two OS users); a missing one,
  // or the default one, is prepared here.
  let socketDirExists = true;
  try {
    statSync(socketDir);
  } catch {
    socketDirExists = false;
  }
  if (socketDir === defaultSocketDir || !socketDirExists) {
    mkdirSync(dirname(socketDir), { recursive: true, mode: 0o755 });
    ensureDir(socketDir, enclave.uid, api.gid, 0o2750);
  }
  assertReachable(socketDir, api, 'API_USER', 'the socket directory', X);

  for (const name of readdirSync(dataDir)) {
    const path = join(dataDir, name);
    if (path === enclaveDir || path === socketDir) continue;
    chownTree(path, api.uid, api.gid);
  }
}
