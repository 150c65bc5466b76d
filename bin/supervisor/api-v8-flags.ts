/**
 * V8 flags of the API process: the supervisor (main.ts) starts the API with them, and the systemd unit
 * (bin/systemd/wallet-api.service) and `npm run start:api` carry the same on their command lines
 * (test/api-v8-flags.test.ts checks them).
 *
 * `--heap-growing-percent=20`: after each full collection V8 lets the old generation grow to 1.2 times what survived
 * it (by default up to 4 times on a machine with this much memory, as fast as its collector keeps up), so the old
 * generation is collected earlier and its memory stays near the live objects. With 1,000 auto-retry payments active
 * at once the API's resident high-water mark went from 457–520 MB to 247–253 MB, its chain pool started with the
 * first large input; the cost is 9–11 full collections instead of 1 while they run, mostly on V8's helper threads
 * (docs/benchmarks.md, "Where the API's memory goes").
 *
 * V8's default semi-space (16 MB): a 32 MB one halves a signing request's scavenges (the API's GC time per EVM
 * sign-message went from 7–16 µs to 5–6 µs), but costs 26–40 MB idle and 32–40 MB at 1,000 auto-retry payments,
 * and no throughput difference showed beyond the spread of identical runs.
 */
export const API_V8_FLAGS: readonly string[] = ['--heap-growing-percent=20'];
