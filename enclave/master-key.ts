/**
 * The enclave master key (64 hex characters): from `ENCLAVE_MASTER_KEY`, `ENCLAVE_MASTER_KEY_FD` or the
 * systemd credential `enclave-master-key` (see secret-source.ts), or, when none is given, from
 * `$DATA_DIR/enclave/master.key`, created at first start with mode 0600 and refused if its mode is looser.
 * The key itself is never printed.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from '@noble/ciphers/utils.js';
import { InternalError } from '../chains/domain/errors.ts';
import { readSecret, type Secret } from './secret-source.ts';

export const MASTER_KEY_ENV = 'ENCLAVE_MASTER_KEY';
const HEX_64 = /^[0-9a-fA-F]{64}$/;

/** A master key problem the operator must fix; the message says what and where. */
export class MasterKeyError extends InternalError {
  override name = 'MasterKeyError';
  constructor(message: string) {
    super('MASTER_KEY_INVALID', message);
  }
}

export interface LoadedMasterKey {
  key: Uint8Array;
  source: Secret['kind'];
  /** True when this call created the key file. */
  created: boolean;
}

/** Path of the master key file inside the enclave directory. */
export function masterKeyPath(enclaveDir: string): string {
  return join(enclaveDir, 'master.key');
}

function parseHexKey(text: string, origin: string): Uint8Array {
  const trimmed = text.trim();
  if (!HEX_64.test(trimmed)) {
    throw new MasterKeyError(`${origin} must hold exactly 64 hexadecimal characters (a 32-byte key)`);
  }
  return Uint8Array.from(Buffer.from(trimmed, 'hex'));
}

/**
 * Loads the master key. `keyStoreExists` guards against silently creating a fresh key next to a key store
 * sealed under another one (for example after restoring a backup without its master key).
 */
export function loadMasterKey(options: {
  env: Record<string, string | undefined>;
  enclaveDir: string;
  keyStoreExists: boolean;
  log?: (line: string) => void;
}): LoadedMasterKey {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const path = masterKeyPath(options.enclaveDir);
  // Also removes ENCLAVE_MASTER_KEY(_FD) from `env` (the process's own), so no worker or child inherits it.
  const given = readSecret(MASTER_KEY_ENV, { env: options.env, file: path, what: 'the enclave master key' });
  if (given) {
    const origin = given.kind === 'file' ? `the master key file ${path}` : given.origin;
    return { key: parseHexKey(given.value, origin), source: given.kind, created: false };
  }

  if (options.keyStoreExists) {
    throw new MasterKeyError(
      `the enclave key store exists but its master key does not: restore ${path} from your backup ` +
        `or set ${MASTER_KEY_ENV}`,
    );
  }

  const key = randomBytes(32);
  // 'wx': fail rather than overwrite if another process created the file meanwhile.
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${Buffer.from(key).toString('hex')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const dirFd = openSync(dirname(path), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  log(
    `enclave: ************************************************************************\n` +
      `enclave: NEW MASTER KEY created at ${path} (mode 0600).\n` +
      `enclave: BACK IT UP NOW, SEPARATELY from the data directory and its replicas.\n` +
      `enclave: Without it every wallet key in the enclave store is lost; with it and the store, all are exposed.\n` +
      `enclave: ************************************************************************`,
  );
  return { key, source: 'file', created: true };
}
