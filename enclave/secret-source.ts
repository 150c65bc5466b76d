/**
 * Where a secret comes from, by the name of its variable (`ENCLAVE_MASTER_KEY`, `ADMIN_TOKEN`, …), in the
 * conventional places:
 *
 * - the environment variable `NAME`: simple, but the least private, since `/proc/<pid>/environ` shows a
 *   process's initial environment (to its own user and root) for its whole life, whatever it deletes later;
 * - a file descriptor, `NAME_FD=<n>`: a pipe the parent wrote the secret into and closed (what the supervisor
 *   does), or a file opened by the service manager;
 * - a systemd credential, `$CREDENTIALS_DIRECTORY/<name>` (`LoadCredential=`), the name lower-cased with
 *   dashes (`ENCLAVE_MASTER_KEY` → `enclave-master-key`);
 * - a file the caller names (the master key's `$DATA_DIR/enclave/master.key`), refused if its mode is loose.
 *
 * At most one of the first three may be given. What was read is removed from the given environment (`NAME`
 * and `NAME_FD`) and the descriptor is closed, so worker threads and child processes do not inherit it.
 * Imports nothing of the enclave: the supervisor and the API use it too.
 */
import { closeSync, existsSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { InternalError } from '../chains/domain/errors.ts';
import { assertPrivateFile } from './private-file.ts';

/** A secret source that is set but unusable (bad descriptor, two sources at once); the message names it. */
export class SecretSourceError extends InternalError {
  override name = 'SecretSourceError';
  constructor(message: string) {
    super('SECRET_SOURCE_INVALID', message);
  }
}

export interface Secret {
  /** The text as read (callers trim and check it). */
  value: string;
  /** Where it came from, for messages: names the variable, descriptor or file, never the value. */
  origin: string;
  kind: 'env' | 'fd' | 'credential' | 'file';
}

/** Longest secret we read from a descriptor or credential (a key or a token is far shorter). */
const MAX_SECRET_BYTES = 64 * 1024;
/** A parent that hands a secret over a pipe writes it at once; past this, the start fails instead of hanging. */
const FD_READ_TIMEOUT_MS = 10_000;

/** The credential file name for a variable name: `ENCLAVE_MASTER_KEY` → `enclave-master-key`. */
export function credentialName(name: string): string {
  return name.toLowerCase().replaceAll('_', '-');
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Reads a descriptor to its end, synchronously. A pipe inherited from Node's `child_process` may be in
 * non-blocking mode, so EAGAIN means "not written yet": wait a little and read again.
 */
function readDescriptor(fd: number, origin: string): string {
  const chunk = Buffer.alloc(4096);
  const chunks: Buffer[] = [];
  let total = 0;
  const deadline = Date.now() + FD_READ_TIMEOUT_MS;
  try {
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, chunk, 0, chunk.length, null);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN' && Date.now() < deadline) {
          sleepSync(5);
          continue;
        }
        throw new SecretSourceError(`could not read ${origin}: ${code ?? (error as Error).message}`);
      }
      if (n === 0) break;
      total += n;
      if (total > MAX_SECRET_BYTES) throw new SecretSourceError(`${origin} holds more than ${MAX_SECRET_BYTES} bytes`);
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
    const all = Buffer.concat(chunks);
    const text = all.toString('utf8');
    all.fill(0);
    return text;
  } finally {
    chunk.fill(0);
    for (const c of chunks) c.fill(0);
    try {
      closeSync(fd);
    } catch {
      // already closed or never open: the read above said so
    }
  }
}

/**
 * Reads the secret `name` from the first place that has it (see the module comment); `undefined` when none
 * does. `env` is the environment to read and scrub (the process's own, normally). An empty `NAME` counts as
 * given: callers decide what empty means.
 */
export function readSecret(
  name: string,
  options: { env: Record<string, string | undefined>; file?: string; what?: string },
): Secret | undefined {
  const { env } = options;
  const fdVar = `${name}_FD`;
  const credentialsDir = env['CREDENTIALS_DIRECTORY'];
  const credential = credentialsDir ? join(credentialsDir, credentialName(name)) : undefined;
  const given = [
    env[name] !== undefined ? name : undefined,
    env[fdVar] !== undefined ? fdVar : undefined,
    credential && existsSync(credential) ? credential : undefined,
  ].filter((s): s is string => s !== undefined);
  if (given.length > 1) {
    throw new SecretSourceError(`${name} is given more than once (${given.join(', ')}): keep exactly one`);
  }

  if (env[name] !== undefined) {
    const value = env[name];
    delete env[name];
    return { value, origin: name, kind: 'env' };
  }

  const fdText = env[fdVar];
  if (fdText !== undefined) {
    delete env[fdVar];
    if (!/^\d{1,6}$/.test(fdText)) {
      throw new SecretSourceError(`${fdVar} must be a file descriptor number (got "${fdText.slice(0, 20)}")`);
    }
    const origin = `${name} (file descriptor ${fdText} from ${fdVar})`;
    return { value: readDescriptor(Number(fdText), origin), origin, kind: 'fd' };
  }

  if (credential && given[0] === credential) {
    const origin = `${name} (systemd credential ${credential})`;
    let bytes: Buffer;
    try {
      bytes = readFileSync(credential);
    } catch (error) {
      throw new SecretSourceError(`could not read ${origin}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
    if (bytes.length > MAX_SECRET_BYTES)
      throw new SecretSourceError(`${origin} holds more than ${MAX_SECRET_BYTES} bytes`);
    const value = bytes.toString('utf8');
    bytes.fill(0);
    return { value, origin, kind: 'credential' };
  }

  if (options.file && existsSync(options.file)) {
    assertPrivateFile(options.file, options.what ?? name);
    const bytes = readFileSync(options.file);
    const value = bytes.toString('utf8');
    bytes.fill(0);
    return { value, origin: `the file ${options.file}`, kind: 'file' };
  }
  return undefined;
}
