/**
 * The master keys an enclave starts with: its master key (master-key.ts: `ENCLAVE_MASTER_KEY` or
 * `$DATA_DIR/enclave/master.key`) and, for a master-key rotation, the next key, from the same kind of place:
 *
 * - master key from a file: the next key is `master.key.next` beside it, which the enclave creates itself when the
 *   operator asks for a rotation (0600, fsynced, with a loud "back it up" line) and renames over `master.key`
 *   (atomically) once every row is wrapped by it;
 * - master key given from outside (`ENCLAVE_MASTER_KEY`): the next key is given the same way,
 *   `ENCLAVE_MASTER_KEY_NEXT`, and the operator swaps the two values once the rotation is done.
 *
 * Mixing the two (a file key with ENCLAVE_MASTER_KEY_NEXT, or an outside key beside a master.key.next) stops the
 * start: which key to promote, and how, would be ambiguous. Neither key is ever printed; logs name keys by id.
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import * as sodium from 'sodium-native';
import { KEY_BYTES, masterKeyId } from './envelope.ts';
import { type LoadedMasterKey, loadMasterKey, MASTER_KEY_ENV, MasterKeyError, masterKeyPath } from './master-key.ts';
import { readSecret } from './secret-source.ts';

export const MASTER_KEY_NEXT_ENV = 'ENCLAVE_MASTER_KEY_NEXT';

/** A master key the enclave holds, with its id and where it came from. */
export interface HeldKey {
  key: Uint8Array;
  /** masterKeyId(key). */
  id: string;
  /** `file`: master.key or master.key.next; anything else: given from outside (environment, option…). */
  source: LoadedMasterKey['source'] | 'option';
}

/** The keys an enclave starts with. */
export interface StartKeys {
  /** The master key (ENCLAVE_MASTER_KEY or master.key). */
  master: HeldKey;
  /** The next key of a rotation, if one is given (ENCLAVE_MASTER_KEY_NEXT or master.key.next). */
  next?: HeldKey;
}

/** Path of the next master key file inside the enclave directory. */
export function nextMasterKeyPath(enclaveDir: string): string {
  return join(enclaveDir, 'master.key.next');
}

/** Where a key of this source is configured, in words for log lines and errors. */
export function describeKeySource(key: Pick<HeldKey, 'source'>, which: 'master' | 'next', enclaveDir: string): string {
  if (key.source === 'file') return which === 'master' ? masterKeyPath(enclaveDir) : nextMasterKeyPath(enclaveDir);
  if (key.source === 'option') return `the ${which} key option`;
  return which === 'master' ? MASTER_KEY_ENV : MASTER_KEY_NEXT_ENV;
}

/** 64 hex characters (surrounding whitespace allowed) decoded into a new array, or undefined. No string is made. */
function decodeHexKey(text: Uint8Array): Uint8Array | undefined {
  let start = 0;
  let end = text.length;
  const space = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
  while (start < end && space(text[start]!)) start++;
  while (end > start && space(text[end - 1]!)) end--;
  if (end - start !== KEY_BYTES * 2) return undefined;
  const nibble = (byte: number): number => {
    if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
    if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
    if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
    return -1;
  };
  const key = new Uint8Array(KEY_BYTES);
  for (let i = 0; i < KEY_BYTES; i++) {
    const high = nibble(text[start + 2 * i]!);
    const low = nibble(text[start + 2 * i + 1]!);
    if (high < 0 || low < 0) {
      key.fill(0);
      return undefined;
    }
    key[i] = (high << 4) | low;
  }
  return key;
}

/** Reads a key file into a buffer of its own (fs.readFileSync may use Node's shared pool), decodes, wipes it. */
function readKeyFile(path: string): Uint8Array {
  const fd = openSync(path, 'r');
  const buffer = Buffer.alloc(256);
  try {
    const mode = fstatSync(fd).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw new MasterKeyError(`${path} has mode ${mode.toString(8)}: it must be readable by its owner only (0600)`);
    }
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const key = decodeHexKey(buffer.subarray(0, length));
    if (!key)
      throw new MasterKeyError(`the key file ${path} must hold exactly 64 hexadecimal characters (a 32-byte key)`);
    return key;
  } finally {
    buffer.fill(0);
    closeSync(fd);
  }
}

function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Loads the enclave's master key (master-key.ts) and the next key of a rotation if one is given. `masterKey` and
 * `nextMasterKey` (in-process callers and tests) take the place of the environment and files.
 */
export function loadStartKeys(options: {
  env: Record<string, string | undefined>;
  enclaveDir: string;
  keyStoreExists: boolean;
  log: (line: string) => void;
  masterKey?: Uint8Array;
  nextMasterKey?: Uint8Array;
}): StartKeys {
  const { env, enclaveDir } = options;
  const loaded: Pick<LoadedMasterKey, 'key'> & { source: HeldKey['source'] } = options.masterKey
    ? { key: options.masterKey, source: 'option' }
    : loadMasterKey({ env, enclaveDir, keyStoreExists: options.keyStoreExists, log: options.log });
  const master: HeldKey = { key: loaded.key, id: masterKeyId(loaded.key), source: loaded.source };

  const nextPath = nextMasterKeyPath(enclaveDir);
  // Like the master key: the variable, a descriptor (ENCLAVE_MASTER_KEY_NEXT_FD, the supervisor's way) or the
  // systemd credential `enclave-master-key-next`; read once and removed from this process's environment.
  const fromEnv = readSecret(MASTER_KEY_NEXT_ENV, { env })?.value;
  let next: HeldKey | undefined;
  if (options.nextMasterKey) {
    next = { key: options.nextMasterKey, id: masterKeyId(options.nextMasterKey), source: 'option' };
  } else if (master.source === 'file') {
    if (fromEnv !== undefined) {
      throw new MasterKeyError(
        `${MASTER_KEY_NEXT_ENV} is set but the master key comes from ${masterKeyPath(enclaveDir)}: a file key ` +
          `rotates to ${nextPath}, which the enclave creates (npm run admin -- rotate-master-key); unset ${MASTER_KEY_NEXT_ENV}`,
      );
    }
    if (existsSync(nextPath)) next = readNextMasterKeyFile(enclaveDir);
  } else {
    if (existsSync(nextPath)) {
      throw new MasterKeyError(
        `${nextPath} exists but the master key is given from outside (${describeKeySource(master, 'master', enclaveDir)}): ` +
          `give the next key as ${MASTER_KEY_NEXT_ENV}, and move ${nextPath} out of the data directory`,
      );
    }
    if (fromEnv !== undefined) {
      const bytes = Buffer.from(fromEnv, 'utf8');
      const key = decodeHexKey(bytes);
      bytes.fill(0);
      if (!key)
        throw new MasterKeyError(`${MASTER_KEY_NEXT_ENV} must hold exactly 64 hexadecimal characters (a 32-byte key)`);
      next = { key, id: masterKeyId(key), source: 'env' };
    }
  }
  if (next && next.id === master.id) next = undefined;
  return next ? { master, next } : { master };
}

/** Reads an existing `master.key.next` (0600 only). */
export function readNextMasterKeyFile(enclaveDir: string): HeldKey {
  const key = readKeyFile(nextMasterKeyPath(enclaveDir));
  return { key, id: masterKeyId(key), source: 'file' };
}

/**
 * Creates `master.key.next` with a fresh random key (mode 0600 from the start, fsynced, directory fsynced) and
 * prints the loud "back it up" line. Fails if the file exists.
 */
export function createNextMasterKeyFile(enclaveDir: string, log: (line: string) => void): HeldKey {
  const path = nextMasterKeyPath(enclaveDir);
  const key = new Uint8Array(KEY_BYTES);
  sodium.randombytes_buf(key as Buffer);
  const text = Buffer.alloc(KEY_BYTES * 2 + 1);
  const digits = '0123456789abcdef';
  for (let i = 0; i < KEY_BYTES; i++) {
    text[2 * i] = digits.charCodeAt(key[i]! >>> 4);
    text[2 * i + 1] = digits.charCodeAt(key[i]! & 0x0f);
  }
  text[KEY_BYTES * 2] = 0x0a;
  // 'wx': never overwrite a next key that exists (it may already wrap rows).
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    text.fill(0);
    closeSync(fd);
  }
  fsyncDirectory(enclaveDir);
  const id = masterKeyId(key);
  log(
    `enclave: ************************************************************************\n` +
      `enclave: NEW MASTER KEY (id ${id}) created at ${path} (mode 0600) for a master-key rotation.\n` +
      `enclave: BACK IT UP NOW, SEPARATELY from the data directory and its replicas, before confirming the rotation.\n` +
      `enclave: Once rows move to it, without it every wallet key in the enclave store is lost.\n` +
      `enclave: ************************************************************************`,
  );
  return { key, id, source: 'file' };
}

/**
 * Promotes the next key file: renames `master.key.next` over `master.key` (atomic: either name holds a whole key
 * at every instant) and fsyncs the directory. The old key is then gone from the data directory.
 */
export function promoteNextMasterKeyFile(enclaveDir: string): void {
  const path = nextMasterKeyPath(enclaveDir);
  if ((statSync(path).mode & 0o077) !== 0) throw new MasterKeyError(`${path} must be readable by its owner only`);
  renameSync(path, masterKeyPath(enclaveDir));
  fsyncDirectory(enclaveDir);
}
