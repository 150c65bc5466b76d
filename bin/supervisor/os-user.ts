/**
 * `ENCLAVE_USER` / `API_USER`: the OS user a child of the supervisor runs as. A user name (looked up through
 * the system's user database, `getent passwd`, so LDAP or systemd users work too) or a numeric `uid[:gid]`
 * (no entry needed; the gid defaults to the user's primary group, else to the uid).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { InternalError } from '../../chains/domain/errors.ts';

export interface OsUser {
  uid: number;
  gid: number;
  /** For messages: `name (uid 1001)` or `uid 1001`. */
  label: string;
  home?: string;
}

/** A bad `ENCLAVE_USER` / `API_USER`; the message names the variable. */
export class OsUserError extends InternalError {
  override name = 'OsUserError';
  constructor(message: string) {
    super('OS_USER_INVALID', message);
  }
}

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

function parsePasswdLine(line: string): PasswdEntry | undefined {
  const f = line.split(':');
  if (f.length < 7 || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!)) return undefined;
  return { name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]! };
}

/** The passwd entry of a name or uid, from `getent` (every NSS source) or, without it, /etc/passwd. */
function lookup(key: string): PasswdEntry | undefined {
  try {
    const out = execFileSync('getent', ['passwd', key], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return parsePasswdLine(out.trim().split('\n')[0] ?? '');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined; // getent ran: no such entry
  }
  let text = '';
  try {
    text = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const entry = parsePasswdLine(line);
    if (entry && (entry.name === key || String(entry.uid) === key)) return entry;
  }
  return undefined;
}

const MAX_ID = 2 ** 31 - 2;

/** Resolves the value of `variable` (a user name or `uid[:gid]`). */
export function resolveOsUser(variable: string, value: string): OsUser {
  const numeric = /^(\d{1,10})(?::(\d{1,10}))?$/.exec(value);
  if (numeric) {
    const uid = Number(numeric[1]);
    const entry = lookup(numeric[1]!);
    const gid = numeric[2] !== undefined ? Number(numeric[2]) : (entry?.gid ?? uid);
    if (uid > MAX_ID || gid > MAX_ID) throw new OsUserError(`${variable}: ${value} is not a valid uid[:gid]`);
    return {
      uid,
      gid,
      label: entry ? `${entry.name} (uid ${uid})` : `uid ${uid}`,
      ...(entry ? { home: entry.home } : {}),
    };
  }
  if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$/.test(value)) {
    throw new OsUserError(`${variable} must be a user name or a numeric uid[:gid] (got "${value.slice(0, 40)}")`);
  }
  const entry = lookup(value);
  if (!entry) throw new OsUserError(`${variable}: no user named "${value}" on this system`);
  return { uid: entry.uid, gid: entry.gid, label: `${entry.name} (uid ${entry.uid})`, home: entry.home };
}
