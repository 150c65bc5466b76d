import type Database from 'better-sqlite3';

/** One amount the ledger counts: what a signature moves of one asset on one network. */
export interface SpendEntry {
  network: string;
  asset: string;
  /** Base units, a decimal string. */
  amount: string;
  /** When it started counting (epoch ms): the windows it counts in are those holding this moment. */
  countedAt: number;
  /** Set once no usable signature of it exists: it counts no more. */
  releasedAt: number | null;
}

/** A spend window: its owner (key, wallet, network, asset), its length and its epoch-aligned start. */
export interface SpendWindowKey {
  apiKeyId: string;
  walletId: string;
  network: string;
  asset: string;
  windowMs: number;
  windowStart: number;
}

interface WindowRow {
  windowMs: number;
  windowStart: number;
  total: string;
}

/**
 * The spend ledger of signing policies (store/schema.ts `policy_spend`, `policy_spend_windows`; POLICIES.md §4).
 * Every method that writes runs inside a writer transaction (the decision point's, or the payment step's that ends a
 * payment); `windowTotal` with `{ materialize: false }` only reads (the usage route).
 *
 * A window's total lives in one row, made from the ledger the first time the window is read and kept in step by every
 * reservation and release that falls in it, so a decision costs one indexed read per window whatever the window has
 * counted. Amounts are decimal strings summed as bigints (a token amount may be up to 2^256 − 1).
 */
export function createSpendRepo(sqlite: Database.Database) {
  const entriesOf = sqlite.prepare(
    `select network, asset, amount, counted_at as countedAt, released_at as releasedAt
       from policy_spend where api_key_id = ? and spend_ref = ?`,
  );
  const insertEntry = sqlite.prepare(
    `insert into policy_spend (api_key_id, spend_ref, network, asset, wallet_id, amount, counted_at, released_at)
       values (@apiKeyId, @spendRef, @network, @asset, @walletId, @amount, @countedAt, null)
     on conflict (api_key_id, spend_ref, network, asset) do update
       set wallet_id = excluded.wallet_id, amount = excluded.amount, counted_at = excluded.counted_at,
         released_at = null
       where policy_spend.released_at is not null`,
  );
  const releaseEntry = sqlite.prepare(
    `update policy_spend set released_at = ? where api_key_id = ? and spend_ref = ? and released_at is null
       returning wallet_id as walletId, network, asset, amount, counted_at as countedAt`,
  );
  const getWindow = sqlite.prepare(
    `select total from policy_spend_windows where api_key_id = ? and wallet_id = ? and network = ? and asset = ?
       and window_ms = ? and window_start = ?`,
  );
  const insertWindow = sqlite.prepare(
    `insert into policy_spend_windows (api_key_id, wallet_id, network, asset, window_ms, window_start, window_end, total)
       values (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const windowsAt = sqlite.prepare(
    `select window_ms as windowMs, window_start as windowStart, total from policy_spend_windows
       where api_key_id = ? and wallet_id = ? and network = ? and asset = ? and window_end > ? and window_start <= ?`,
  );
  const setWindow = sqlite.prepare(
    `update policy_spend_windows set total = ? where api_key_id = ? and wallet_id = ? and network = ? and asset = ?
       and window_ms = ? and window_start = ?`,
  );
  const sumEntries = sqlite.prepare(
    `select amount from policy_spend where api_key_id = ? and wallet_id = ? and network = ? and asset = ?
       and counted_at >= ? and counted_at < ? and released_at is null`,
  );
  const pruneWindows = sqlite.prepare(
    `delete from policy_spend_windows where rowid in (select rowid from policy_spend_windows
       where api_key_id = ? and wallet_id = ? and network = ? and asset = ? and window_end <= ? limit 16)`,
  );

  function fromLedger(w: SpendWindowKey): bigint {
    let total = 0n;
    const rows = sumEntries.all(
      w.apiKeyId,
      w.walletId,
      w.network,
      w.asset,
      w.windowStart,
      w.windowStart + w.windowMs,
    ) as Array<{ amount: string }>;
    for (const r of rows) total += BigInt(r.amount);
    return total;
  }

  /** Adds `delta` to every stored window of (key, wallet, network, asset) that holds the moment `at`. */
  function shift(apiKeyId: string, walletId: string, network: string, asset: string, at: number, delta: bigint) {
    const rows = windowsAt.all(apiKeyId, walletId, network, asset, at, at) as WindowRow[];
    for (const r of rows) {
      let next = BigInt(r.total) + delta;
      if (next < 0n) next = 0n;
      setWindow.run(next.toString(), apiKeyId, walletId, network, asset, r.windowMs, r.windowStart);
    }
  }

  return {
    /** The ledger entries of what `spendRef` (a transaction id, or a request's reference) counted, released or not. */
    entriesOf(apiKeyId: string, spendRef: string): SpendEntry[] {
      return entriesOf.all(apiKeyId, spendRef) as SpendEntry[];
    },

    /**
     * What a window counted (every entry not released, counted in it). `materialize` (inside a write): a window read
     * for the first time is stored, from then on kept in step; without it the total is computed and nothing written.
     */
    windowTotal(w: SpendWindowKey, { materialize }: { materialize: boolean }): bigint {
      const row = getWindow.get(w.apiKeyId, w.walletId, w.network, w.asset, w.windowMs, w.windowStart) as
        | { total: string }
        | undefined;
      if (row) return BigInt(row.total);
      const total = fromLedger(w);
      if (materialize) {
        // Windows that ended are never read again by a decision: a few are dropped each time one is made.
        pruneWindows.run(w.apiKeyId, w.walletId, w.network, w.asset, w.windowStart);
        insertWindow.run(
          w.apiKeyId,
          w.walletId,
          w.network,
          w.asset,
          w.windowMs,
          w.windowStart,
          w.windowStart + w.windowMs,
          total.toString(),
        );
      }
      return total;
    },

    /**
     * Counts what `spendRef` moves, at `at`: each (network, asset) once. An amount `spendRef` already counts (a replay,
     * a replacement) is left as it is; one it counted and released counts again from `at`, on `walletId`. Answers what
     * was added.
     */
    reserve(
      apiKeyId: string,
      walletId: string,
      spendRef: string,
      network: string,
      moved: ReadonlyArray<{ asset: string; amount: bigint }>,
      at: number,
    ): Array<{ asset: string; amount: bigint }> {
      const added: Array<{ asset: string; amount: bigint }> = [];
      for (const { asset, amount } of moved) {
        if (amount <= 0n) continue;
        const r = insertEntry.run({
          apiKeyId,
          spendRef,
          network,
          asset,
          walletId,
          amount: amount.toString(),
          countedAt: at,
        });
        if (r.changes === 0) continue;
        shift(apiKeyId, walletId, network, asset, at, amount);
        added.push({ asset, amount });
      }
      return added;
    },

    /** Stops counting what `spendRef` counted (no usable signature of it exists); answers how many entries. */
    release(apiKeyId: string, spendRef: string, at: number): number {
      const rows = releaseEntry.all(at, apiKeyId, spendRef) as Array<{
        walletId: string;
        network: string;
        asset: string;
        amount: string;
        countedAt: number;
      }>;
      for (const r of rows) shift(apiKeyId, r.walletId, r.network, r.asset, r.countedAt, -BigInt(r.amount));
      return rows.length;
    },

    /** Every entry of a key counted in [from, to), oldest first (simulate replays spend from these). */
    entriesBetween(
      apiKeyId: string,
      from: number,
      to: number,
    ): Array<SpendEntry & { walletId: string; spendRef: string }> {
      return sqlite
        .prepare(
          `select spend_ref as spendRef, wallet_id as walletId, network, asset, amount, counted_at as countedAt,
             released_at as releasedAt
           from policy_spend where api_key_id = ? and counted_at >= ? and counted_at < ? order by counted_at`,
        )
        .all(apiKeyId, from, to) as Array<SpendEntry & { walletId: string; spendRef: string }>;
    },
  };
}

export type SpendRepo = ReturnType<typeof createSpendRepo>;
