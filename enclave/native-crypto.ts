/**
 * The native curve libraries of the crypto workers, loaded once per thread:
 *
 * - secp256k1: libsecp256k1 through the `secp256k1` package's native binding. Loaded from `secp256k1/bindings`, not
 *   the package root: the root silently falls back to a pure-JavaScript implementation when the binding is missing,
 *   and a custody service must fail loudly at start instead (the enclave's first task throws "No native build").
 * - Ed25519: libsodium through `sodium-native` (prebuilt binaries ship in the package).
 *
 * Both were chosen for speed, measured against the WebAssembly build of libsecp256k1 and against node:crypto's
 * Ed25519 (OpenSSL) with `test/bench/raw-signing-rate.ts`: several times faster per signature and per check.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** libsecp256k1 (native binding only; see above). */
export const secp256k1: typeof import('secp256k1') = require('secp256k1/bindings');

/** libsodium. */
export * as sodium from 'sodium-native';
