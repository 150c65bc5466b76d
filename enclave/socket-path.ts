/**
 * Where the enclave's socket is by default: `$DATA_DIR/socket/enclave.sock`, in a directory of its own so
 * that the directory can be shared with the API's group (0750) while the data directory and the enclave's
 * files stay closed to it. `ENCLAVE_SOCKET` overrides it on both sides. Imports nothing: the API's
 * configuration reads it too.
 */
import { join } from 'node:path';

/** Name of the socket's own directory under `$DATA_DIR`. */
export const SOCKET_DIR_NAME = 'socket';

/** `<dataDir>/socket/enclave.sock`. */
export function defaultSocketPath(dataDir: string): string {
  return join(dataDir, SOCKET_DIR_NAME, 'enclave.sock');
}
