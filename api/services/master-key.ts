/**
 * Master-key rotation for the operator (admin API and CLI). The enclave does the work and holds every key; this
 * process relays the request and the answer, which names keys by id only (a keyed hash, never key material).
 * See enclave/key-rotation.ts for the states and docs/operations.md "Rotating the master key" for the procedure.
 */
import type { EnclaveClient } from '../../enclave/client.ts';
import type { EnclaveOps } from '../../enclave/public.ts';

export type MasterKeyStatus = EnclaveOps['masterKeyStatus']['result'];

export function createMasterKeyService(deps: { enclave: Pick<EnclaveClient, 'masterKeyStatus' | 'rotateMasterKey'> }) {
  const { enclave } = deps;
  return {
    /** Where the master keys stand: state, key ids, sealed rows per key id, the operator's next step. */
    status(): Promise<MasterKeyStatus> {
      return enclave.masterKeyStatus();
    },
    /**
     * Without `confirmKeyId`: prepares a rotation and answers the next key's id. With it: starts (or resumes) the
     * rotation to that key; the enclave re-wraps every row in the background and keeps serving meanwhile.
     */
    rotate(confirmKeyId?: string): Promise<MasterKeyStatus> {
      return enclave.rotateMasterKey(confirmKeyId === undefined ? {} : { confirmKeyId });
    },
  };
}

export type MasterKeyService = ReturnType<typeof createMasterKeyService>;
