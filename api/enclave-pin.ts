/**
 * The API's pin of the enclave's identity (enclave/identity.ts): trust on first use. At the first handshake the
 * fingerprint is written to `$DATA_DIR/enclave-pin.json` (mode 0600, the API's user); from then on every connection
 * must present that key, or it is refused (enclave/client.ts logs the line and requests answer 503).
 *
 * Only the operator re-pins, at the terminal: `npm run admin -- pin-enclave FINGERPRINT` (bin/enclave-pin-verbs.ts)
 * rewrites this file after checking that the enclave on the socket proves that key. No HTTP route reads or writes
 * it, so a caller of the admin API cannot move the pin. The file is read again at every handshake, so a re-pin
 * takes effect at the client's next attempt, without a restart. A file that is unreadable, malformed, a symlink,
 * writable by others or owned by another user refuses every enclave: it is never silently replaced.
 */
import {
  chownSync,
  closeSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { InternalError } from '../chains/domain/errors.ts';
import type { EnclaveIdentity, EnclaveIdentityPolicy } from '../enclave/client.ts';
import { isFingerprint } from '../enclave/public.ts';

export const PIN_FILE = 'enclave-pin.json';

export interface EnclavePin {
  /** Hex SHA-256 of the enclave identity key's SPKI DER. */
  fingerprint: string;
  pinnedAt: string;
}

/** The pin file cannot be trusted or read; the message names the problem and the file. */
export class PinFileError extends InternalError {
  override name = 'PinFileError';
  constructor(message: string) {
    super('PIN_FILE_INVALID', message);
  }
}

/** Where the pin lives. */
export function pinPath(dataDir: string): string {
  return path.join(dataDir, PIN_FILE);
}

/** Reads the pin; undefined when there is none yet. Throws PinFileError when the file exists but is unusable. */
export function readPin(dataDir: string): EnclavePin | undefined {
  const file = pinPath(dataDir);
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PinFileError(`${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!stats.isFile()) throw new PinFileError(`${file} is not a regular file`);
  if ((stats.mode & 0o022) !== 0) {
    throw new PinFileError(`${file} (mode ${(stats.mode & 0o777).toString(8)}) is writable by other users`);
  }
  const own = typeof process.getuid === 'function' ? process.getuid() : 0;
  if (stats.uid !== own && stats.uid !== 0) throw new PinFileError(`${file} is owned by uid ${stats.uid}`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new PinFileError(`${file} is not valid JSON`);
  }
  const { fingerprint, pinnedAt } = (value ?? {}) as Record<string, unknown>;
  if (typeof fingerprint !== 'string' || !isFingerprint(fingerprint) || typeof pinnedAt !== 'string') {
    throw new PinFileError(`${file} holds no fingerprint (64 lowercase hex characters) and pinnedAt`);
  }
  return { fingerprint, pinnedAt };
}

/**
 * Writes the pin durably: a temporary file (0600, fsynced), then linked into place when `replace` is false (fails
 * with EEXIST if a pin appeared meanwhile) or renamed over the old pin when true. `owner` (when run as root by the
 * CLI) keeps the file readable by the API's user.
 */
export function writePin(
  dataDir: string,
  fingerprint: string,
  options: { replace: boolean; owner?: { uid: number; gid: number } },
): EnclavePin {
  if (!isFingerprint(fingerprint)) throw new PinFileError('a fingerprint is 64 lowercase hex characters');
  const file = pinPath(dataDir);
  const pin: EnclavePin = { fingerprint, pinnedAt: new Date().toISOString() };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(pin)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (options.owner) chownSync(temporary, options.owner.uid, options.owner.gid);
    if (options.replace) renameSync(temporary, file);
    else linkSync(temporary, file);
  } finally {
    rmSync(temporary, { force: true });
  }
  const dir = openSync(dataDir, 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return pin;
}

/**
 * The identity policy of the API's enclave client: pins the first verified key, accepts only the pinned one after.
 * `log` gets the one line that says a key was pinned.
 */
export function createEnclavePin(deps: { dataDir: string; log: (line: string) => void }): EnclaveIdentityPolicy {
  const file = pinPath(deps.dataDir);
  return {
    check(identity: EnclaveIdentity): string | undefined {
      let pin: EnclavePin | undefined;
      try {
        pin = readPin(deps.dataDir);
        if (!pin) {
          try {
            pin = writePin(deps.dataDir, identity.fingerprint, { replace: false });
            deps.log(`enclave: identity ${identity.fingerprint} pinned in ${file} (first start: trust on first use)`);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
            pin = readPin(deps.dataDir);
          }
        }
      } catch (error) {
        return `the identity pin cannot be used, so no enclave is trusted: ${(error as Error).message}`;
      }
      if (pin?.fingerprint === identity.fingerprint) return undefined;
      return (
        `the enclave presented identity ${identity.fingerprint}, but ${file} pins ${pin?.fingerprint}: ` +
        'if the enclave was replaced on purpose, compare with the fingerprint it logs at start and re-pin with ' +
        '`npm run admin -- pin-enclave <fingerprint>`'
      );
    },
  };
}
