/**
 * Properties of the spend ledger (store/spend-repo.ts) over a real SQLite file, each write in a writer transaction as
 * the service runs it: random sequences of reservations (new references, replays, re-reservations after a release),
 * releases, window reads (stored or computed) and a fake clock that moves windows on, checked against a plain model
 * (fc.commands): a window's total is the sum of the unreleased entries counted in [start, start + length) of its
 * (key, wallet, network, asset), whether or not the window was stored before the entries changed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createStore, type Store } from './index.ts';
import type { SpendWindowKey } from './spend-repo.ts';

const KEYS = ['a', 'b'] as const;
const WALLETS = ['w-1', 'w-2'] as const;
const NETWORKS = ['eip155:1', 'eip155:8453'] as const;
const ASSETS = ['native', '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'] as const;
const REFS = ['key:k1', 'key:k2', 'tx-1', 'tx-2', 'body:w-1:transfer:h'] as const;
/** Window lengths (ms): short, so that the fake clock crosses many windows in one sequence. */
const WINDOWS = [7, 30, 100] as const;
/** 2026-01-01T00:00:00Z: a start aligned to every window above. */
const T0 = Date.UTC(2026, 0, 1);
const MAX_AMOUNT = 2n ** 256n - 1n;

let dir: string;
let store: Store;
/** Every sequence writes under API keys of its own, so one database file serves them all. */
let run = 0;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-spend-'));
  store = createStore(path.join(dir, 'service.db'));
});
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true });
});

/**
 * A write transaction as the writer opens one (BEGIN IMMEDIATE), without its fdatasync: the ledger's answers do not
 * depend on durability, and thousands of fsyncs would make these properties slow to run.
 */
const write = <T>(fn: () => T): T => store.sqlite.transaction(fn).immediate();

interface ModelEntry {
  key: string;
  ref: string;
  wallet: string;
  network: string;
  asset: string;
  amount: bigint;
  countedAt: number;
  releasedAt: number | null;
}

/** The ledger as the doc comments describe it: one entry per (key, spendRef, network, asset). */
class Model {
  now: number;
  entries = new Map<string, ModelEntry>();
  constructor(start: number) {
    this.now = start;
  }
  reserve(
    key: string,
    wallet: string,
    ref: string,
    network: string,
    moved: ReadonlyArray<{ asset: string; amount: bigint }>,
    at: number,
  ) {
    const added: Array<{ asset: string; amount: bigint }> = [];
    for (const { asset, amount } of moved) {
      if (amount <= 0n) continue;
      const id = `${key}|${ref}|${network}|${asset}`;
      const e = this.entries.get(id);
      if (e && e.releasedAt === null) continue;
      this.entries.set(id, { key, ref, wallet, network, asset, amount, countedAt: at, releasedAt: null });
      added.push({ asset, amount });
    }
    return added;
  }
  release(key: string, ref: string, at: number): number {
    let n = 0;
    for (const e of this.entries.values()) {
      if (e.key === key && e.ref === ref && e.releasedAt === null) {
        e.releasedAt = at;
        n++;
      }
    }
    return n;
  }
  total(w: SpendWindowKey): bigint {
    let sum = 0n;
    for (const e of this.entries.values()) {
      if (
        e.key === w.apiKeyId &&
        e.wallet === w.walletId &&
        e.network === w.network &&
        e.asset === w.asset &&
        e.releasedAt === null &&
        e.countedAt >= w.windowStart &&
        e.countedAt < w.windowStart + w.windowMs
      ) {
        sum += e.amount;
      }
    }
    return sum;
  }
  entriesOf(key: string, ref: string) {
    return [...this.entries.values()]
      .filter((e) => e.key === key && e.ref === ref)
      .map((e) => ({
        network: e.network,
        asset: e.asset,
        amount: e.amount.toString(),
        countedAt: e.countedAt,
        releasedAt: e.releasedAt,
      }));
  }
}

interface Real {
  /** The API key ids of this sequence (KEYS mapped to ids no other sequence uses). */
  keys: Record<(typeof KEYS)[number], string>;
}

const sortEntries = <T extends { network: string; asset: string }>(list: T[]) =>
  [...list].sort((x, y) => `${x.network}|${x.asset}`.localeCompare(`${y.network}|${y.asset}`));

const windowAt = (at: number, ms: number) => Math.floor(at / ms) * ms;

const storedWindows = () =>
  store.sqlite.prepare(
    `select api_key_id as apiKeyId, wallet_id as walletId, network, asset, window_ms as windowMs,
       window_start as windowStart, total from policy_spend_windows where api_key_id in (?, ?)`,
  );

/**
 * After every step: each entry agrees with the model; every window stored so far (current, ended or still to come)
 * holds what the model counts in it; and the current window of each length, for every owner, read as the usage route
 * reads it (stored or computed), does too.
 */
function checkAll(m: Model, r: Real) {
  for (const k of KEYS) {
    for (const ref of REFS) {
      assert.deepEqual(
        sortEntries(store.spend.entriesOf(r.keys[k], ref).map((e) => ({ ...e }))),
        sortEntries(m.entriesOf(r.keys[k], ref)),
        `entriesOf(${k}, ${ref})`,
      );
    }
  }
  const rows = storedWindows().all(r.keys.a, r.keys.b) as Array<SpendWindowKey & { total: string }>;
  for (const { total, ...w } of rows) assert.equal(BigInt(total), m.total(w), `stored window ${JSON.stringify(w)}`);
  for (const k of KEYS) {
    for (const walletId of WALLETS) {
      for (const network of NETWORKS) {
        for (const asset of ASSETS) {
          for (const windowMs of WINDOWS) {
            const w: SpendWindowKey = {
              apiKeyId: r.keys[k],
              walletId,
              network,
              asset,
              windowMs,
              windowStart: windowAt(m.now, windowMs),
            };
            assert.equal(store.spend.windowTotal(w, { materialize: false }), m.total(w), `window ${JSON.stringify(w)}`);
          }
        }
      }
    }
  }
}

type Cmd = fc.Command<Model, Real>;

class Reserve implements Cmd {
  constructor(
    readonly k: (typeof KEYS)[number],
    readonly wallet: string,
    readonly ref: string,
    readonly network: string,
    readonly moved: Array<{ asset: string; amount: bigint }>,
    /** How long before the clock's time the reservation is counted (a decision that waited for the writer). */
    readonly lag: number,
  ) {}
  check = () => true;
  run(m: Model, r: Real) {
    const at = m.now - this.lag;
    const added = write(() => store.spend.reserve(r.keys[this.k], this.wallet, this.ref, this.network, this.moved, at));
    assert.deepEqual(added, m.reserve(r.keys[this.k], this.wallet, this.ref, this.network, this.moved, at));
    checkAll(m, r);
  }
  toString() {
    const moved = this.moved.map((x) => `${x.asset.slice(0, 6)}:${x.amount}`).join(',');
    return `reserve(${this.k},${this.wallet},${this.ref},${this.network},[${moved}],-${this.lag})`;
  }
}

class Release implements Cmd {
  constructor(
    readonly k: (typeof KEYS)[number],
    readonly ref: string,
  ) {}
  check = () => true;
  run(m: Model, r: Real) {
    const n = write(() => store.spend.release(r.keys[this.k], this.ref, m.now));
    assert.equal(n, m.release(r.keys[this.k], this.ref, m.now));
    checkAll(m, r);
  }
  toString() {
    return `release(${this.k},${this.ref})`;
  }
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  run(m: Model, r: Real) {
    m.now += this.ms;
    checkAll(m, r);
  }
  toString() {
    return `advance(${this.ms})`;
  }
}

/** The clock moves to a window boundary (the next start of windows of `windowMs`), or 1 ms either side of it. */
class AdvanceToBoundary implements Cmd {
  constructor(
    readonly windowMs: number,
    readonly delta: -1 | 0 | 1,
  ) {}
  check = () => true;
  run(m: Model, r: Real) {
    m.now = Math.max(m.now, windowAt(m.now, this.windowMs) + this.windowMs + this.delta);
    checkAll(m, r);
  }
  toString() {
    return `advanceToBoundary(${this.windowMs}ms${this.delta === 0 ? '' : this.delta > 0 ? '+1' : '-1'})`;
  }
}

/** A decision's read: stores the window when `materialize` (inside a write), from then on kept in step. */
class ReadWindow implements Cmd {
  constructor(
    readonly k: (typeof KEYS)[number],
    readonly wallet: string,
    readonly network: string,
    readonly asset: string,
    readonly windowMs: number,
    /** Which window: the current one (0), one before it (-1, -2), the next one (1). */
    readonly offset: number,
    readonly materialize: boolean,
  ) {}
  check = () => true;
  run(m: Model, r: Real) {
    const w: SpendWindowKey = {
      apiKeyId: r.keys[this.k],
      walletId: this.wallet,
      network: this.network,
      asset: this.asset,
      windowMs: this.windowMs,
      windowStart: windowAt(m.now, this.windowMs) + this.offset * this.windowMs,
    };
    const total = this.materialize
      ? write(() => store.spend.windowTotal(w, { materialize: true }))
      : store.spend.windowTotal(w, { materialize: false });
    assert.equal(total, m.total(w));
    checkAll(m, r);
  }
  toString() {
    return `read(${this.k},${this.wallet},${this.network},${this.asset.slice(0, 6)},${this.windowMs}ms,${this.offset},${this.materialize ? 'store' : 'compute'})`;
  }
}

const amount = fc.oneof(
  { weight: 6, arbitrary: fc.bigInt({ min: 0n, max: 20n }) },
  { weight: 1, arbitrary: fc.constant(MAX_AMOUNT) },
);
const moved = fc.array(fc.record({ asset: fc.constantFrom(...ASSETS), amount }), { minLength: 1, maxLength: 3 });
const key = fc.constantFrom(...KEYS);

const commands = fc.commands(
  [
    fc
      .tuple(
        key,
        fc.constantFrom(...WALLETS),
        fc.constantFrom(...REFS),
        fc.constantFrom(...NETWORKS),
        moved,
        fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 60 }) }),
      )
      .map((a) => new Reserve(...a)),
    fc.tuple(key, fc.constantFrom(...REFS)).map((a) => new Release(...a)),
    fc.integer({ min: 0, max: 40 }).map((ms) => new Advance(ms)),
    fc
      .tuple(fc.constantFrom(...WINDOWS), fc.constantFrom<-1 | 0 | 1>(-1, 0, 1))
      .map((a) => new AdvanceToBoundary(...a)),
    fc
      .tuple(
        key,
        fc.constantFrom(...WALLETS),
        fc.constantFrom(...NETWORKS),
        fc.constantFrom(...ASSETS),
        fc.constantFrom(...WINDOWS),
        fc.integer({ min: -2, max: 1 }),
        fc.boolean(),
      )
      .map((a) => new ReadWindow(...a)),
  ],
  { size: '+1', maxCommands: 60 },
);

function newRun(start: number) {
  const n = ++run;
  return () => ({
    model: new Model(start),
    real: { keys: { a: `run${n}-a`, b: `run${n}-b` } } satisfies Real,
  });
}

describe('spend ledger: properties over a real SQLite file', () => {
  it("a window's total is the sum of the unreleased entries counted in [start, end), stored window or not (model)", () => {
    fc.assert(
      fc.property(commands, fc.integer({ min: 0, max: 99 }), (cmds, offset) => {
        fc.modelRun(newRun(T0 + offset), cmds);
      }),
      { numRuns: 100 },
    );
  });

  it('a spendRef counts at most once while not released; a released one counts again only when reserved again', () => {
    // One reference, replayed many times with any amounts and times, released at some point, reserved again later.
    const scenario = fc.record({
      first: fc.bigInt({ min: 1n, max: 1000n }),
      replays: fc.array(fc.record({ amount: fc.bigInt({ min: 0n, max: 1000n }), after: fc.nat(20) }), {
        maxLength: 6,
      }),
      releaseAfter: fc.nat(20),
      gapBeforeAgain: fc.nat(20),
      again: fc.option(fc.bigInt({ min: 1n, max: 1000n }), { nil: undefined }),
      windowMs: fc.constantFrom(...WINDOWS),
      stored: fc.boolean(),
    });
    fc.assert(
      fc.property(scenario, (s) => {
        const apiKeyId = `once-${++run}`;
        const w = (at: number): SpendWindowKey => ({
          apiKeyId,
          walletId: 'w-1',
          network: 'eip155:1',
          asset: 'native',
          windowMs: s.windowMs,
          windowStart: windowAt(at, s.windowMs),
        });
        const read = (at: number) =>
          s.stored
            ? write(() => store.spend.windowTotal(w(at), { materialize: true }))
            : store.spend.windowTotal(w(at), { materialize: false });
        const reserve = (amount: bigint, at: number) =>
          write(() => store.spend.reserve(apiKeyId, 'w-1', 'tx-1', 'eip155:1', [{ asset: 'native', amount }], at));
        let at = T0;
        const countedAt = at;
        if (s.stored) read(at);
        assert.deepEqual(reserve(s.first, at), [{ asset: 'native', amount: s.first }]);
        for (const replay of s.replays) {
          at += replay.after;
          assert.deepEqual(reserve(replay.amount, at), [], 'a replay adds nothing');
          // Counted once, in the window of its first reservation, with its first amount.
          assert.equal(read(countedAt), s.first);
          if (windowAt(at, s.windowMs) !== windowAt(countedAt, s.windowMs)) assert.equal(read(at), 0n);
        }
        at += s.releaseAfter;
        assert.equal(
          write(() => store.spend.release(apiKeyId, 'tx-1', at)),
          1,
        );
        assert.equal(read(countedAt), 0n, 'released: it counts no more');
        assert.equal(
          write(() => store.spend.release(apiKeyId, 'tx-1', at)),
          0,
          'a second release: nothing',
        );
        at += s.gapBeforeAgain;
        assert.equal(read(at), 0n, 'not counted again until reserved again');
        if (s.again === undefined) return;
        assert.deepEqual(reserve(s.again, at), [{ asset: 'native', amount: s.again }]);
        assert.equal(read(at), s.again, 'reserved again: counts its new amount from the new time');
        if (windowAt(at, s.windowMs) !== windowAt(countedAt, s.windowMs)) assert.equal(read(countedAt), 0n);
        assert.deepEqual(store.spend.entriesOf(apiKeyId, 'tx-1'), [
          { network: 'eip155:1', asset: 'native', amount: s.again.toString(), countedAt: at, releasedAt: null },
        ]);
      }),
      { numRuns: 150 },
    );
  });

  it("releasing one spendRef never changes another's entries, nor what the other counts in any window", () => {
    const entry = fc.record({
      ref: fc.constantFrom(...REFS),
      wallet: fc.constantFrom(...WALLETS),
      asset: fc.constantFrom(...ASSETS),
      amount: fc.bigInt({ min: 1n, max: 50n }),
      at: fc.nat(250),
    });
    const scenario = fc.record({
      entries: fc.array(entry, { minLength: 1, maxLength: 12 }),
      released: fc.constantFrom(...REFS),
      releaseAt: fc.nat(300),
      stored: fc.subarray([...WINDOWS]),
    });
    fc.assert(
      fc.property(scenario, (s) => {
        const apiKeyId = `release-${++run}`;
        const sorted = [...s.entries].sort((x, y) => x.at - y.at);
        write(() => {
          for (const e of sorted) {
            store.spend.reserve(
              apiKeyId,
              e.wallet,
              e.ref,
              'eip155:1',
              [{ asset: e.asset, amount: e.amount }],
              T0 + e.at,
            );
          }
        });
        // Some windows are stored (a decision read them), so the release must keep them in step.
        const windows: SpendWindowKey[] = [];
        for (const windowMs of WINDOWS) {
          for (let start = T0; start < T0 + 300; start += windowMs) {
            for (const walletId of WALLETS) {
              for (const asset of ASSETS) {
                windows.push({ apiKeyId, walletId, network: 'eip155:1', asset, windowMs, windowStart: start });
              }
            }
          }
        }
        write(() => {
          for (const w of windows.filter((x) => s.stored.includes(x.windowMs as (typeof WINDOWS)[number]))) {
            store.spend.windowTotal(w, { materialize: true });
          }
        });
        const others = REFS.filter((ref) => ref !== s.released);
        const before = new Map(others.map((ref) => [ref, store.spend.entriesOf(apiKeyId, ref)]));
        const releasedEntries = store.spend
          .entriesOf(apiKeyId, s.released)
          .filter((e) => e.releasedAt === null)
          .map((e) => ({ ...e, wallet: sorted.find((x) => x.ref === s.released && x.asset === e.asset)!.wallet }));
        const totals = windows.map((w) => store.spend.windowTotal(w, { materialize: false }));
        write(() => store.spend.release(apiKeyId, s.released, T0 + s.releaseAt));
        for (const ref of others) assert.deepEqual(store.spend.entriesOf(apiKeyId, ref), before.get(ref), ref);
        windows.forEach((w, i) => {
          // Each window loses exactly what the released reference counted in it, nothing of the others.
          const mine = releasedEntries
            .filter(
              (e) =>
                e.wallet === w.walletId &&
                e.asset === w.asset &&
                e.countedAt >= w.windowStart &&
                e.countedAt < w.windowStart + w.windowMs,
            )
            .reduce((sum, e) => sum + BigInt(e.amount), 0n);
          assert.equal(store.spend.windowTotal(w, { materialize: false }), totals[i]! - mine, JSON.stringify(w));
        });
      }),
      { numRuns: 100 },
    );
  });

  it('window reset: an entry counted before a window starts (or at its end) does not count in it', () => {
    const scenario = fc.record({
      windowMs: fc.constantFrom(...WINDOWS, 86_400_000),
      /** Where in its window the entry is counted: its first ms, its last, or anywhere. */
      position: fc.oneof(fc.constant('first'), fc.constant('last'), fc.nat()),
      /** How many windows later the window read starts (1: the next one). */
      later: fc.integer({ min: 1, max: 3 }),
      amount: fc.bigInt({ min: 1n, max: MAX_AMOUNT }),
      stored: fc.boolean(),
    });
    fc.assert(
      fc.property(scenario, (s) => {
        const apiKeyId = `reset-${++run}`;
        const start = T0 + 5 * s.windowMs;
        const offset = s.position === 'first' ? 0 : s.position === 'last' ? s.windowMs - 1 : s.position % s.windowMs;
        const at = start + offset;
        const w = (windowStart: number): SpendWindowKey => ({
          apiKeyId,
          walletId: 'w-1',
          network: 'eip155:1',
          asset: 'native',
          windowMs: s.windowMs,
          windowStart,
        });
        const next = w(start + s.later * s.windowMs);
        const earlier = w(start - s.windowMs);
        // Stored before the reservation: the reservation must not shift a window that does not hold its moment (the
        // earlier window ends where the entry's own begins).
        if (s.stored) {
          write(() => {
            // In this order: storing a window drops the stored ones that ended before it starts.
            store.spend.windowTotal(next, { materialize: true });
            store.spend.windowTotal(earlier, { materialize: true });
          });
        }
        write(() =>
          store.spend.reserve(apiKeyId, 'w-1', 'tx-1', 'eip155:1', [{ asset: 'native', amount: s.amount }], at),
        );
        assert.equal(store.spend.windowTotal(w(start), { materialize: false }), s.amount, 'counted in its own window');
        assert.equal(store.spend.windowTotal(earlier, { materialize: false }), 0n, 'not in an earlier one');
        assert.equal(store.spend.windowTotal(next, { materialize: false }), 0n, 'not in a later one');
        assert.equal(
          write(() => store.spend.windowTotal(next, { materialize: true })),
          0n,
          'not in a later one, stored',
        );
      }),
      { numRuns: 150 },
    );
  });
});
