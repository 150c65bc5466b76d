/**
 * `Idempotency-Key` on every `/v1` POST (DESIGN §7: one mechanism keyed by project, key and a normalized fingerprint).
 *
 * A key names one operation: its route, wallet and body (SHA-256 of the body in canonical JSON, so key order and
 * whitespace do not matter). What a retry with the same key gets:
 * - the stored answer, status and body as first sent, for 24 hours (`Idempotent-Replayed: true`);
 * - for a payment, whose key is written in the transaction that writes its record, the record's answer: a retry can
 *   never start a second payment, even after a crash between the record and its answer;
 * - 409 IDEMPOTENCY_CONFLICT when the route, wallet or body differ;
 * - while the first request runs, the same answer once it is in (duplicates wait; after `waitMs`, a retryable 409
 *   IDEMPOTENCY_KEY_IN_USE).
 * What is stored: answers of requests that did something that must not be done twice (a 2xx; any answer below 500 of
 * a payment whose record exists). Refusals that did nothing (validation, a busy wallet, an unavailable node) are not:
 * the identical request may be sent again with the same key and is tried again.
 *
 * Duplicates in flight are met in this process (`inflight`), which is the only one writing the database; the
 * primary key of the table backs it: a payment's key and its record commit together or not at all.
 */
import { hash } from 'node:crypto';
import { idempotencyKeyInUse, ServiceError } from '../../chains/domain/errors.ts';
import { jsonString } from '../../chains/domain/json.ts';
import type { IdempotencyClaim, IdempotencyName, StoredAnswer } from '../../store/idempotency-repo.ts';
import type { Store } from '../../store/index.ts';

/** How long an answer is replayed (the spec's 24 hours); the key may then name something new. */
export const ANSWER_CACHE_MS = 24 * 60 * 60 * 1000;

/** How long a duplicate waits for the request that holds its key before it is answered a retryable 409. */
export const DEFAULT_WAIT_MS = 60_000;

const SWEEP_EVERY_MS = 10 * 60 * 1000;
const SWEEP_BATCH = 5_000;

export type Begun =
  /** Run the request; `settle` its answer. */
  | { kind: 'run'; claim: IdempotencyClaim }
  /** Send this answer again. */
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key's payment record exists without a stored answer: answer from the record; `settle` that answer. */
  | { kind: 'resume'; claim: IdempotencyClaim };

/** JSON with object keys sorted at every level: equal values give equal text, whatever order they were sent in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o).sort();
    return `{${keys.map((k) => `${jsonString(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  // Strings (most of a body) without the generic serializer: the same text (chains/domain/json.ts).
  return typeof value === 'string' ? jsonString(value) : (JSON.stringify(value) ?? 'null');
}

/** The fingerprint of a body: SHA-256 (hex) of its canonical JSON. */
export function fingerprintOf(body: unknown): string {
  // One-shot: half the instructions of createHash().update().digest() for a short body (callgrind).
  return hash('sha256', canonicalJson(body), 'hex');
}

/** What differs between what a key named and a new request with it, if anything. */
function difference(held: IdempotencyName, asked: IdempotencyName): 'operation' | 'walletId' | 'body' | null {
  if (held.operation !== asked.operation) return 'operation';
  if (held.walletId !== asked.walletId) return 'walletId';
  if (held.fingerprint !== asked.fingerprint) return 'body';
  return null;
}

function conflict(differs: 'operation' | 'walletId' | 'body'): ServiceError {
  const what = { operation: 'another route', walletId: 'another wallet', body: 'another body' }[differs];
  return new ServiceError(
    'IDEMPOTENCY_CONFLICT',
    409,
    `this Idempotency-Key was already used with ${what}: a key names one operation; use a new key for a new one`,
    { details: { differs } },
  );
}

interface InFlight {
  claim: IdempotencyClaim;
  done: Promise<void>;
  release: () => void;
}

export function createIdempotency(deps: {
  store: Pick<Store, 'idempotency' | 'writer'>;
  now?: () => number;
  waitMs?: number;
  log?: (msg: string, err: unknown) => void;
}) {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  const waitMs = deps.waitMs ?? DEFAULT_WAIT_MS;
  const log = deps.log ?? (() => {});
  const inflight = new Map<string, InFlight>();
  let sweepTimer: NodeJS.Timeout | undefined;

  const slot = (name: Pick<IdempotencyName, 'projectId' | 'key'>) => `${name.projectId}\u0000${name.key}`;

  function hold(claim: IdempotencyClaim): void {
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    inflight.set(slot(claim), { claim, done, release });
  }

  /** Waits for a request in flight to let go of the key: false when `ms` passed first. */
  function waitFor(entry: InFlight, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      void entry.done.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  async function sweep(): Promise<void> {
    const t = now();
    while (
      (await store.writer.write(() => store.idempotency.purgeExpired(t, SWEEP_BATCH), { bounded: false })) ===
      SWEEP_BATCH
    ) {
      // another batch: the writer interleaves other work between them
    }
  }

  return {
    /**
     * What a request with a key does: run (holding the key), replay a stored answer, or resume from its record.
     * Throws IDEMPOTENCY_CONFLICT, or IDEMPOTENCY_KEY_IN_USE after waiting `waitMs` for the request holding the key.
     */
    async begin(name: IdempotencyName): Promise<Begun> {
      const deadline = now() + waitMs;
      for (;;) {
        const entry = inflight.get(slot(name));
        if (entry) {
          const differs = difference(entry.claim, name);
          if (differs) throw conflict(differs);
          const left = deadline - now();
          if (left <= 0 || !(await waitFor(entry, left))) throw idempotencyKeyInUse();
          continue;
        }
        const t = now();
        const row = store.idempotency.find(name.projectId, name.key, t);
        if (row) {
          const differs = difference(row, name);
          if (differs) throw conflict(differs);
          if (row.answer) return { kind: 'replay', answer: row.answer };
          const claim = {
            ...name,
            createdAt: row.createdAt,
            expiresAt: row.expiresAt,
            transactionId: row.transactionId,
          };
          hold(claim);
          return { kind: 'resume', claim };
        }
        const claim: IdempotencyClaim = { ...name, createdAt: t, expiresAt: t + ANSWER_CACHE_MS, transactionId: null };
        hold(claim);
        return { kind: 'run', claim };
      }
    },

    /**
     * The request holding `claim` answered: stores `answer` (null: nothing to store) and lets go of the key once that
     * is durable, so a duplicate waiting for it reads the stored answer.
     */
    settle(claim: IdempotencyClaim, answer: StoredAnswer | null): void {
      const key = slot(claim);
      const entry = inflight.get(key);
      const release = () => {
        if (entry && inflight.get(key) === entry) inflight.delete(key);
        entry?.release();
      };
      if (!answer) {
        release();
        return;
      }
      store.writer
        .write(() => store.idempotency.saveAnswer(claim, answer))
        .then(release, (err: unknown) => {
          // Not stored: a retry runs again (a payment's retry finds its record through the key written with it).
          log('storing an idempotent answer failed', err);
          release();
        });
    },

    /** Requests holding a key now (a gauge for tests and metrics). */
    inFlight(): number {
      return inflight.size;
    },

    /** Deletes expired keys now and every ten minutes. */
    start(): void {
      const run = () => {
        sweep().catch((err: unknown) => log('idempotency key sweep failed', err));
      };
      run();
      sweepTimer = setInterval(run, SWEEP_EVERY_MS);
      sweepTimer.unref();
    },
    stop(): void {
      if (sweepTimer) clearInterval(sweepTimer);
      sweepTimer = undefined;
    },
  };
}

export type { IdempotencyClaim };
export type Idempotency = ReturnType<typeof createIdempotency>;
