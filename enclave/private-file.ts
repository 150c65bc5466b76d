/**
 * Files that hold secrets (the master key, the sealed key store) must be readable by their owner only: a key
 * file that its group or everyone can read is refused at start, with the file and the fix in the message,
 * rather than warned about and used. The enclave exits with EX_CONFIG (78) on it, which the supervisor does
 * not retry. Imports nothing of the enclave: the supervisor and the API may use it too.
 */
import { statSync } from 'node:fs';
import { InternalError } from '../chains/domain/errors.ts';

/** A secret-holding file whose mode lets other users read or write it. */
export class LooseModeError extends InternalError {
  override name = 'LooseModeError';
  constructor(message: string) {
    super('FILE_MODE_LOOSE', message);
  }
}

/** `0644`-style text of a mode's permission bits. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/**
 * Throws `LooseModeError` when `path` exists and its group or others have any permission on it; does nothing
 * when it does not exist. `what` says what the file holds, for the message.
 */
export function assertPrivateFile(path: string, what: string): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((mode & 0o077) === 0) return;
  throw new LooseModeError(
    `${path} (${what}) has mode ${octalMode(mode)}, so other users may read it; it must be readable by its ` +
      `owner only. Fix: chmod 600 ${path} and ask who could have copied it meanwhile.`,
  );
}
