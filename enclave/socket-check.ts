/**
 * Checks the enclave socket before the client connects to it: that only the enclave (or root) could have put it
 * where it is. A process that could create or swap the socket's name could answer in the enclave's place; the
 * identity handshake would refuse it anyway, and these checks refuse the setups that invite it (a socket in
 * /tmp-like directories, a symlink, a socket anyone may write).
 *
 * - the path names a socket itself, not a symbolic link to one elsewhere;
 * - the socket is not world-writable, and its owner is the enclave's user when known (ENCLAVE_USER), else root or
 *   the API's own user;
 * - its directory is writable by its owner only (no group or other write bit; a sticky bit does not help here:
 *   anyone may still create the socket's name while the enclave restarts) and owned by root or an allowed user;
 * - every directory above it (as written and as resolved) is owned by root or an allowed user and is writable by
 *   its owner only, unless sticky: in a sticky directory such as /tmp nobody else may rename or remove an entry
 *   they do not own, so a data directory inside /tmp stays put.
 * Holds no secret; runs on the API side at every connection attempt (a handful of stat calls).
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, realpathSync, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface SocketOwners {
  /** Owners accepted for the socket itself. */
  socket: readonly number[];
  /** Owners accepted for the directories on its path (root is always accepted). */
  directories: readonly number[];
}

export type SocketCheck = { ok: true } | { ok: false; missing: boolean; problem: string };

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/** The owners to accept: the enclave's uid when known, else root and this process's user. */
export function socketOwners(enclaveUid?: number): SocketOwners {
  const own = typeof process.getuid === 'function' ? process.getuid() : 0;
  return enclaveUid === undefined
    ? { socket: [0, own], directories: [0, own] }
    : { socket: [enclaveUid], directories: [0, own, enclaveUid] };
}

/**
 * The uid of `user` (a user name or a numeric uid), through the system's user database (`id -u`, so NSS users
 * resolve too); undefined when there is no such user.
 */
export function resolveUid(user: string): number | undefined {
  if (/^\d+$/.test(user)) return Number(user);
  try {
    const out = execFileSync('id', ['-u', '--', user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return /^\d+$/.test(out.trim()) ? Number(out.trim()) : undefined;
  } catch {
    return undefined;
  }
}

function mode(stats: Stats): string {
  return (stats.mode & 0o7777).toString(8).padStart(4, '0');
}

/** Every directory from `dir` up to the root. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    out.push(current);
    if (dirname(current) === current) return out;
  }
}

function checkDirectory(dir: string, stats: Stats, owners: SocketOwners, holdsSocket: boolean): string | undefined {
  if (!stats.isDirectory()) return `${dir} is not a directory`;
  if (stats.uid !== 0 && !owners.directories.includes(stats.uid)) {
    return `${dir} is owned by uid ${stats.uid}, not by root or the enclave's or this service's user`;
  }
  const writable = (stats.mode & GROUP_OR_OTHER_WRITE) !== 0;
  if (writable && (holdsSocket || (stats.mode & STICKY) === 0)) {
    return (
      `${dir} (mode ${mode(stats)}) is writable by other users, who could put their own socket in the enclave's ` +
      `place: use a directory only its owner can write (chmod go-w)`
    );
  }
  return undefined;
}

/**
 * Checks `socketPath` as described above. `missing` is true when nothing is there yet (the enclave is starting):
 * worth retrying, not a refusal.
 */
export function checkEnclaveSocket(socketPath: string, owners: SocketOwners): SocketCheck {
  const path = resolve(socketPath);
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR'
      ? { ok: false, missing: true, problem: `${path} does not exist` }
      : { ok: false, missing: false, problem: `${path} cannot be checked (${code ?? 'error'})` };
  }
  const refuse = (problem: string): SocketCheck => ({ ok: false, missing: false, problem });
  if (stats.isSymbolicLink()) return refuse(`${path} is a symbolic link, not the enclave's socket itself`);
  if (!stats.isSocket()) return refuse(`${path} is not a socket`);
  if ((stats.mode & 0o002) !== 0) return refuse(`${path} (mode ${mode(stats)}) is writable by every user`);
  if (!owners.socket.includes(stats.uid)) {
    return refuse(
      `${path} is owned by uid ${stats.uid}, expected uid ${owners.socket.join(' or ')} ` +
        "(ENCLAVE_USER in the API's environment names the enclave's user)",
    );
  }

  const dir = dirname(path);
  let realDir: string;
  try {
    realDir = realpathSync(dir);
  } catch (error) {
    return refuse(`${dir} cannot be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const seen = new Set<string>();
  for (const [index, directory] of [...ancestors(realDir), ...ancestors(dir)].entries()) {
    if (seen.has(directory)) continue;
    seen.add(directory);
    let dirStats: Stats;
    try {
      dirStats = statSync(directory);
    } catch (error) {
      return refuse(`${directory} cannot be checked (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const problem = checkDirectory(directory, dirStats, owners, index === 0 || directory === dir);
    if (problem) return refuse(problem);
  }
  return { ok: true };
}
