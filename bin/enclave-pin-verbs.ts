/**
 * The operator CLI's enclave identity verbs (`npm run admin -- enclave-identity | pin-enclave FINGERPRINT`). They
 * work on this machine's files and socket, never over HTTP: run them as the API's user (or root), with the API's
 * environment (DATA_DIR, ENCLAVE_SOCKET, ENCLAVE_USER). See api/enclave-pin.ts.
 */
import { statSync } from 'node:fs';
import { type Config, loadConfig } from '../api/config.ts';
import { type EnclavePin, PinFileError, pinPath, readPin, writePin } from '../api/enclave-pin.ts';
import { type EnclaveIdentity, probeEnclaveIdentity } from '../enclave/client.ts';
import { isFingerprint, socketOwners } from '../enclave/public.ts';

export const ENCLAVE_PIN_USAGE = `  enclave-identity                              the pinned enclave fingerprint and the one the enclave proves now
  pin-enclave FINGERPRINT                       re-pin after a deliberate enclave move: FINGERPRINT must be what the
                                                enclave on the socket proves (it logs it at start); run as the API's user`;

type Probe = { identity: EnclaveIdentity } | { problem: string };

async function probe(config: Config): Promise<Probe> {
  try {
    return {
      identity: await probeEnclaveIdentity({
        socketPath: config.enclaveSocket,
        owners: socketOwners(config.enclaveUid),
      }),
    };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

function pinned(config: Config): EnclavePin | undefined | PinFileError {
  try {
    return readPin(config.dataDir);
  } catch (error) {
    if (error instanceof PinFileError) return error;
    throw error;
  }
}

/**
 * Runs `verb` if it is one of these; returns false otherwise. Prints with `print(object, humanText)`; exits 1
 * through `fail` when the check or the re-pin does not succeed.
 */
export async function runEnclavePinVerb(
  verb: string,
  args: string[],
  io: { print(value: unknown, human: string): void; fail(message: string): never },
): Promise<boolean> {
  if (verb !== 'enclave-identity' && verb !== 'pin-enclave') return false;
  const config = loadConfig();
  const file = pinPath(config.dataDir);

  if (verb === 'enclave-identity') {
    const pin = pinned(config);
    const presented = await probe(config);
    const pinLine =
      pin instanceof PinFileError
        ? `unusable: ${pin.message}`
        : pin
          ? `${pin.fingerprint} (pinned ${pin.pinnedAt}, ${file})`
          : `none yet (the API pins the first enclave it verifies, in ${file})`;
    const enclaveLine =
      'identity' in presented
        ? `${presented.identity.fingerprint} (proved on ${config.enclaveSocket})`
        : `not verified: ${presented.problem}`;
    const matches =
      'identity' in presented && !(pin instanceof PinFileError) && pin?.fingerprint === presented.identity.fingerprint;
    io.print(
      {
        pinned: pin instanceof PinFileError ? null : (pin ?? null),
        presented: 'identity' in presented ? presented.identity.fingerprint : null,
        socket: config.enclaveSocket,
        matches,
      },
      `pinned   ${pinLine}\nenclave  ${enclaveLine}\n${matches ? 'they match' : 'they do NOT match: the API refuses this enclave'}`,
    );
    if (!matches) process.exitCode = 1;
    return true;
  }

  const wanted = args[0]?.toLowerCase();
  if (!wanted || !isFingerprint(wanted)) {
    io.fail('pin-enclave needs the FINGERPRINT the enclave logs at start (64 hex characters)');
  }
  const presented = await probe(config);
  if (!('identity' in presented)) io.fail(`the enclave could not be verified, nothing changed: ${presented.problem}`);
  if (presented.identity.fingerprint !== wanted) {
    io.fail(
      `the enclave on ${config.enclaveSocket} proves ${presented.identity.fingerprint}, not ${wanted}: nothing changed`,
    );
  }
  const before = pinned(config);
  if (!(before instanceof PinFileError) && before?.fingerprint === wanted) {
    io.print({ pinned: before, changed: false }, `${wanted} is already pinned (${file})`);
    return true;
  }
  // Run as root, keep the file the API's: owned like the old pin, or like the data directory.
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    let reference: { uid: number; gid: number };
    try {
      reference = statSync(file);
    } catch {
      reference = statSync(config.dataDir);
    }
    owner = { uid: reference.uid, gid: reference.gid };
  }
  const pin = writePin(config.dataDir, wanted, { replace: true, ...(owner ? { owner } : {}) });
  const was = before instanceof PinFileError ? 'an unusable pin' : (before?.fingerprint ?? 'no pin');
  io.print(
    { pinned: pin, changed: true },
    `pinned ${wanted} in ${file} (was ${was}); the running API accepts it at its next attempt, within seconds`,
  );
  return true;
}
