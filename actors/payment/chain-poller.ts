import type { Observation, PaymentChain } from '../../chains/payment-chain.ts';
import type { TransactionsRepo } from '../../store/transactions-repo.ts';
import type { ActorHost } from '../host/host.ts';

/** One polling round, for metrics and benchmarks. */
export interface PollRound {
  chainKey: string;
  /** Records looked up. */
  watched: number;
  /** HTTP round trips the chain's lookups made. */
  roundTrips: number;
  /** How long the lookups took (the rest of `ms` is delivering what they found). */
  observeMs: number;
  /** Observations delivered to payment actors (final inclusions and proven drops). */
  delivered: number;
  /** Payments the node did not show whose stored bytes were sent again. */
  resent: number;
  ms: number;
}

/** Most records one round looks up; past it the next round goes on from where this one stopped. */
export const MAX_WATCHED_PER_ROUND = 10_000;

/** Most payments whose bytes one round sends again; the others wait for the next rounds. */
export const MAX_RESENT_PER_ROUND = 1_000;

/**
 * Deliveries to payment actors in flight at once during a round. Each chunk's actor steps are written in one group
 * commit that holds the event loop while it runs (about 0.1 ms a delivery): 64 keep that under ~10 ms, where a
 * block's 300 confirmations in one chunk stalled every request in flight for 30–50 ms (measured with
 * `npm run bench:transfers`; the steady-rate p99 went from 171–395 ms to 106–191 ms with this and the EVM
 * observer's memory).
 */
const DELIVERY_CONCURRENCY = 64;

/** One hash that may settle a record, with the last block height its blockhash is accepted at (Solana, when known). */
interface Candidate {
  hash: string;
  lastValidBlockHeight?: number;
}

/**
 * Every hash that may settle a record: its attempts' (each a candidate for the nonce on EVM, each its own blockhash's on
 * Solana) and its manual cancellations' (auto-retry), else its own.
 */
function candidatesOf(r: { hash: string; attempts: string | null; cancellations: string | null }): Candidate[] {
  if (r.attempts === null) return [{ hash: r.hash }];
  const found: Candidate[] = [];
  for (const a of JSON.parse(r.attempts) as Array<{ hash: string | null; lastValidBlockHeight?: number }>) {
    if (a.hash === null) continue;
    found.push(
      typeof a.lastValidBlockHeight === 'number'
        ? { hash: a.hash, lastValidBlockHeight: a.lastValidBlockHeight }
        : { hash: a.hash },
    );
  }
  if (r.cancellations !== null) for (const hash of JSON.parse(r.cancellations) as string[]) found.push({ hash });
  return found.length > 0 ? found : [{ hash: r.hash }];
}

/**
 * What settles a payment, from what the chain shows of all its candidates at once: the first one included for good
 * (whichever attempt it is); or, when every candidate is proven unable to execute, that proof (named by the latest
 * candidate, so that a later set's proof is a new event), unless the nonce was taken by one of the candidates
 * themselves (its inclusion is then still to be seen). Otherwise nothing yet.
 */
function settledBy(
  hashes: readonly string[],
  observations: ReadonlyMap<string, Observation>,
): { hash: string; observation: Observation } | undefined {
  for (const hash of hashes) {
    const o = observations.get(hash);
    if (o?.status === 'included' && o.final) return { hash, observation: o };
  }
  const seen = hashes.map((h) => observations.get(h));
  if (!seen.every((o) => o?.status === 'dropped')) return undefined;
  const takenByOurs = seen.some(
    (o) => o?.status === 'dropped' && o.reason === 'nonce_consumed' && hashes.includes(o.winningHash),
  );
  return takenByOurs ? undefined : { hash: hashes[hashes.length - 1]!, observation: seen[0]! };
}

/** The inbox id of an observation: the same outcome seen again in a later round is applied once. */
function observationId(hash: string, o: Observation): string {
  if (o.status === 'included') return `observed:${hash}:${o.success ? 'ok' : 'err'}:${o.blockHash ?? o.blockNumber}`;
  if (o.status === 'dropped')
    return `observed:${hash}:${o.reason === 'nonce_consumed' ? `by:${o.winningHash}` : o.reason}`;
  return `observed:${hash}:unknown`;
}

/**
 * One poller per chain, not per transaction: every interval it reads the chain's watched records (every record
 * whose signed bytes may still execute: the unresolved ones, and the failed or released ones whose nonce or
 * blockhash is not yet proven spent), looks them all up in one `observe` call (a bounded number of RPC round trips whatever their count), and
 * delivers each settling observation to its payment actor through the durable inbox. Rounds never overlap; a
 * round that fails (the node is down) is logged and the next one tries again.
 */
export function createChainPoller(deps: {
  chain: PaymentChain;
  transactions: Pick<TransactionsRepo, 'watched' | 'signedTransaction'>;
  host: Pick<ActorHost, 'deliver'>;
  intervalMs: number;
  /**
   * How long the node may not show a payment before its stored bytes are sent again (a node can drop a
   * transaction from its mempool, or restart without it). Resending the exact bytes is harmless.
   */
  rebroadcastMs: number;
  maxPerRound?: number;
  now?: () => number;
  onRound?: (round: PollRound) => void;
  log?: (message: string, err?: unknown) => void;
}) {
  const { chain, transactions, host } = deps;
  const maxPerRound = deps.maxPerRound ?? MAX_WATCHED_PER_ROUND;
  const now = deps.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  /** Where the last round stopped when there were more records than one round takes. */
  let afterSeq = 0;
  /** By hash: when this poller last sent the bytes, or first saw the payment not shown by the node. */
  const lastSent = new Map<string, number>();

  async function round(): Promise<PollRound> {
    const started = performance.now();
    let rows = transactions.watched(chain.key, afterSeq, maxPerRound);
    if (rows.length === 0 && afterSeq > 0) {
      afterSeq = 0;
      rows = transactions.watched(chain.key, 0, maxPerRound);
    }
    afterSeq = rows.length === maxPerRound ? rows[rows.length - 1]!.seq : 0;
    if (rows.length === 0) {
      lastSent.clear();
      return {
        chainKey: chain.key,
        watched: 0,
        roundTrips: 0,
        observeMs: 0,
        delivered: 0,
        resent: 0,
        ms: performance.now() - started,
      };
    }
    const observeStarted = performance.now();
    const candidates = new Map(rows.map((r) => [r.id, candidatesOf(r)]));
    const result = await chain.observe(
      rows.flatMap((r) =>
        candidates.get(r.id)!.map((c) => {
          // A Solana attempt's own blockhash bounds it; the record's columns are attempt 0's.
          const height = c.lastValidBlockHeight ?? (c.hash === r.hash ? r.lastValidBlockHeight : null);
          return {
            hash: c.hash,
            from: r.from,
            ...(r.nonce !== null ? { nonce: r.nonce } : {}),
            ...(r.recentBlockhash !== null && c.hash === r.hash ? { blockhash: r.recentBlockhash } : {}),
            ...(height !== null ? { lastValidBlockHeight: height } : {}),
          };
        }),
      ),
    );
    const observeMs = performance.now() - observeStarted;
    const due: Array<{ id: string; hash: string; observation: Observation; candidates: string[] }> = [];
    const resend: Array<{ id: string; hash: string }> = [];
    const at = now();
    for (const r of rows) {
      const hashes = candidates.get(r.id)!.map((c) => c.hash);
      const verdict = settledBy(hashes, result.observations);
      if (verdict) due.push({ id: r.id, ...verdict, candidates: hashes });
      // Shown: a candidate is in a block, or every one is proven unable to execute (nothing left to send). An expired
      // Solana attempt beside a live one leaves the live one to send.
      const seen = hashes.map((h) => result.observations.get(h));
      const shown = seen.some((o) => o?.status === 'included') || seen.every((o) => o?.status === 'dropped');
      // A released record is only watched: its bytes may still land, but the service never sends them again.
      if (shown || r.unresolved !== 1) {
        lastSent.delete(r.hash);
        continue;
      }
      const since = lastSent.get(r.hash);
      if (since === undefined) lastSent.set(r.hash, at);
      else if (at - since >= deps.rebroadcastMs && resend.length < MAX_RESENT_PER_ROUND) resend.push(r);
    }
    // A full round saw every unresolved payment: what it did not see is resolved, and forgotten here.
    if (afterSeq === 0 && lastSent.size > rows.length) {
      const seen = new Set(rows.map((r) => r.hash));
      for (const hash of lastSent.keys()) if (!seen.has(hash)) lastSent.delete(hash);
    }
    const resent = await resendStored(resend, at);
    let delivered = 0;
    for (let i = 0; i < due.length; i += DELIVERY_CONCURRENCY) {
      const at = now();
      const outcomes = await Promise.allSettled(
        due.slice(i, i + DELIVERY_CONCURRENCY).map((d) =>
          host.deliver(
            d.id,
            {
              type: 'OBSERVED',
              observation: d.observation,
              at,
              candidates: d.candidates,
              ...(d.candidates.length > 1 ? { hash: d.hash } : {}),
            },
            { id: observationId(d.hash, d.observation) },
          ),
        ),
      );
      for (const o of outcomes) {
        if (o.status === 'fulfilled') delivered += 1;
        else
          deps.log?.(`chain ${chain.key}: an observation could not be delivered; the next round tries again`, o.reason);
      }
    }
    return {
      chainKey: chain.key,
      watched: rows.length,
      roundTrips: result.roundTrips,
      observeMs,
      delivered,
      resent,
      ms: performance.now() - started,
    };
  }

  /**
   * Sends the stored bytes of payments the node has not shown for `rebroadcastMs`, all at once (the EVM adapter's
   * client batches calls of one tick into one request). Errors are expected (a node that already has them says so)
   * and ignored: a node's verdict on these bytes was given when they were first sent, and the chain decides.
   */
  async function resendStored(items: Array<{ id: string; hash: string }>, at: number): Promise<number> {
    const sends: Array<Promise<void>> = [];
    for (const item of items) {
      const signed = transactions.signedTransaction(item.id);
      if (signed === null) continue;
      lastSent.set(item.hash, at);
      sends.push(chain.broadcast(signed));
    }
    await Promise.allSettled(sends);
    return sends.length;
  }

  /**
   * Rounds start every `intervalMs` (a round that took longer is followed by the next at once), so a payment is
   * looked up within one interval of its inclusion however long the rounds themselves take.
   */
  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      const started = performance.now();
      running = round().then(
        (r) => deps.onRound?.(r),
        (err) => deps.log?.(`chain ${chain.key}: a polling round failed; the next one tries again`, err),
      );
      void running.finally(() => {
        running = undefined;
        schedule(Math.max(0, deps.intervalMs - (performance.now() - started)));
      });
    }, delay);
    timer.unref();
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      schedule(deps.intervalMs);
    },
    /** One round now (tests and benchmarks). */
    pollOnce: round,
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export type ChainPoller = ReturnType<typeof createChainPoller>;
