/**
 * A secp256k1 ECDSA signature as the enclave returns it: `rs` is 64 bytes `r‖s` with `s` in the lower half of
 * the curve order (low-s, as Ethereum and the Cosmos SDK require); `recovery` is the parity of the `y` coordinate
 * of the nonce point R (EVM `yParity`, `v − 27`).
 */
export interface Secp256k1Signature {
  rs: Uint8Array;
  recovery: 0 | 1;
}

/** A 64-byte ed25519 signature `R‖S` (RFC 8032). */
export type Ed25519Signature = Uint8Array;
