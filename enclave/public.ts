/**
 * What the rest of the service may use of the enclave besides its client (enclave/client.ts, the only code that
 * opens the socket): the protocol's limits and operation types, where the socket lives and who must own it, the
 * identity pin's fingerprint format, and how a secret is read from the environment, a descriptor or a credential.
 * Nothing here touches a key: the API and the actors import the enclave through this file and the client only.
 */
export { isFingerprint } from './identity.ts';
export { octalMode } from './private-file.ts';
export { type EnclaveOps, MAX_MIGRATION_PAYLOAD_BYTES, MAX_SIGN_MESSAGE_BYTES } from './protocol.ts';
export { readSecret, SecretSourceError } from './secret-source.ts';
export { resolveUid, socketOwners } from './socket-check.ts';
export { defaultSocketPath, SOCKET_DIR_NAME } from './socket-path.ts';
