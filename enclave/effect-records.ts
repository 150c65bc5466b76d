/**
 * How long the enclave keeps the record of a keyed signature (protocol.ts, `sign` with `effectKey`; the rows of
 * key-store's `effect_signatures`), and the timer that deletes older ones.
 *
 * Why 30 days is safe: the record is defense in depth, not what keeps a payment from being signed twice. The actor
 * host never runs an at-most-once effect (a payment's `sign`) a second time: one interrupted by a crash is reported
 * to its machine, which fails the payment (actors/README.md). A second request with the same key can only come from
 * a bug (a host or a definition that runs a signing again) or a replayed frame, and either comes while the payment's
 * signing step is under way or at the next start: seconds or minutes, not weeks. Past the retention the same key
 * with another message would be signed, as any request without a key is. Keeping rows longer would only grow
 * keys.db (one row of ~150 bytes per keyed signature, plus its index entry).
 */
import type { KeyWriter } from './key-writer.ts';

export const EFFECT_RECORD_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** How often old records are deleted (and once at start). */
export const EFFECT_RECORD_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Records deleted per transaction: each page holds the writer thread, and the group commits queued behind it, for
 * one short transaction; the next page is sent once it committed, so commits queued meanwhile go first.
 */
export const EFFECT_RECORD_PRUNE_PAGE = 2_000;

/**
 * Deletes effect records older than the retention at start, then every `intervalMs`, page by page on the writer
 * thread. A failure is logged and retried at the next interval. `close()` stops the timer and waits for a pass
 * under way (which stops after its current page).
 */
export function startEffectRecordPruning(deps: {
  writer: Pick<KeyWriter, 'pruneEffectRecords'>;
  log: (line: string) => void;
  now?: () => number;
  retentionMs?: number;
  intervalMs?: number;
  pageSize?: number;
}) {
  const now = deps.now ?? Date.now;
  const retentionMs = deps.retentionMs ?? EFFECT_RECORD_RETENTION_MS;
  const intervalMs = deps.intervalMs ?? EFFECT_RECORD_PRUNE_INTERVAL_MS;
  const pageSize = deps.pageSize ?? EFFECT_RECORD_PRUNE_PAGE;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let closed = false;

  /** One pass: deletes every record older than the retention, a page per transaction. Resolves with the count. */
  async function pruneOnce(): Promise<number> {
    const before = new Date(now() - retentionMs).toISOString();
    let total = 0;
    while (!closed) {
      const deleted = await deps.writer.pruneEffectRecords(before, pageSize);
      total += deleted;
      if (deleted < pageSize) break;
    }
    return total;
  }

  function schedule(delayMs: number): void {
    timer = setTimeout(() => {
      timer = undefined;
      running = pruneOnce()
        .then(
          (deleted) => {
            if (deleted > 0) deps.log(`enclave: deleted ${deleted} effect records older than the retention`);
          },
          (error: unknown) => {
            deps.log(
              `enclave: deleting old effect records failed (retried in ${Math.round(intervalMs / 1000)} s): ` +
                (error instanceof Error ? error.message : String(error)),
            );
          },
        )
        .finally(() => {
          running = undefined;
          if (!closed) schedule(intervalMs);
        });
    }, delayMs);
    // The timer alone never keeps the process up: the socket server does.
    timer.unref();
  }
  schedule(0);

  return {
    pruneOnce,
    async close(): Promise<void> {
      closed = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export type EffectRecordPruning = ReturnType<typeof startEffectRecordPruning>;
