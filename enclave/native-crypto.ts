/**
 * The native curve libraries of the crypto workers, loaded once per thread:
 *
 * - secp256k1: libsecp256k1 through the `secp256k1` package's native binding. Loaded from `secp256k1/bindings`, not
 *   the package root: the root silently falls back to a pure-JavaScript implementation when the binding is missing,
 *   and a custody service must fail loudly at start instead (the enclave's first task throws "No native build").
 * - Ed25519: libsodium through `sodium-native` (prebuilt binaries ship in the package).
 *
 * Measured on the 2-core development machine, per operation on one core (`test/bench/raw-signing-rate.ts` and
 * README "Benchmarks"): libsecp256k1 native sign 34 µs and recovery 47 µs, against 89 µs and 193 µs for the
 * WebAssembly build; libsodium Ed25519 sign 13 µs (from seed and stored public key, no import) and verify 37 µs,
 * against 32 µs JWK import, 29 µs sign and 86 µs verify through node:crypto (OpenSSL 3.0).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** libsecp256k1 (native binding only; see above). */
export const secp256k1: typeof import('secp256k1') = require('secp256k1/bindings');

/** libsodium. */
export * as sodium from 'sodium-native';
