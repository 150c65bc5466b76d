/**
 * Master-key rotation, online: every sealed row's data key is re-wrapped under a new master key while the enclave
 * keeps serving. Ciphertexts are not touched (envelope.ts `rewrap`).
 *
 * The state is the data: `keys.db` records the key that seals new rows (`seal_key_id`), and each row the key that
 * wrapped it. Confirming a rotation records the new key as the sealing key (fsynced) before any row moves; from
 * then on every new row is sealed under it, and the rotation moves the other rows page by page, each page in one
 * transaction. A crash at any point leaves every row wrapped by either the old or the new key, and a start with
 * both keys resumes. Once no row is left under another key, the new key is promoted: a file key by renaming
 * `master.key.next` over `master.key` (done here), a key given from outside by the operator swapping the values.
 *
 * States (`status`): `idle` (every row under the master key, no next key), `prepared` (a next key is held, not yet
 * confirmed), `rotating` (rows remain under another key than the sealing key), `rotated` (every row under the
 * sealing key, which is not yet the master key: the operator promotes it).
 */
import { existsSync } from 'node:fs';
import type { CryptoPool } from './crypto-pool.ts';
import { createKeyRing, UNLABELED_KEY_ID } from './envelope.ts';
import { EnclaveRequestError } from './errors.ts';
import type { KeyStore, RewrapCursor, RewrapRow, RewrapUpdate } from './key-store.ts';
import type { KeyWriter } from './key-writer.ts';
import { MasterKeyError } from './master-key.ts';
import {
  createNextMasterKeyFile,
  describeKeySource,
  type HeldKey,
  MASTER_KEY_NEXT_ENV,
  nextMasterKeyPath,
  promoteNextMasterKeyFile,
  readNextMasterKeyFile,
  type StartKeys,
} from './next-master-key.ts';
import type { EnclaveOps } from './protocol.ts';

export type MasterKeyStatus = EnclaveOps['masterKeyStatus']['result'];

/** Rows re-wrapped per page: one worker task and one transaction each. */
const DEFAULT_PAGE_SIZE = 256;
/**
 * Counting rows per key id scans an index on the writer thread: a status read reuses a count younger than this,
 * or than ten times what the last count took, so an operator polling a large store does not hold up key writes.
 */
const RECOUNT_AFTER_MS = 2000;
/** Pause after each page, as a multiple of the time the page took: keeps most of the enclave for requests. */
const DEFAULT_REST_RATIO = 1;

/** Sealed rows per key id, when they were counted and how long the count took. */
interface RowCount {
  epoch: number;
  at: number;
  tookMs: number;
  rows: Record<string, number>;
}

/** What the rotation needs from the request handler, bound once it exists. */
export interface RotationHooks {
  /** Forgets cached signing rows of these wallets (their rows were just re-wrapped). */
  invalidate(walletIds: readonly string[]): void;
  /** Resolves once every generation and migration under way has committed or failed. */
  settle(): Promise<void>;
}

/** Human-readable name of a row, for errors and logs (ids only, never key material). */
function describeRow(row: RewrapRow): string {
  return row.table === 'shares'
    ? `the ${row.kind} share of wallet ${row.walletId}`
    : `the sealed key ${JSON.stringify(row.name)}`;
}

/**
 * Checks, before anything opens a record, that the enclave holds every master key that wraps a row of `store` and
 * the key that seals new rows. Throws a MasterKeyError naming the missing key ids and the held ones (for example
 * a start with only the old key after a rotation moved the rows to the new one). Returns the sealing key id.
 */
export function checkHeldKeys(
  store: Pick<KeyStore, 'keyIdsInUse' | 'getSealKeyId'>,
  keys: StartKeys,
  enclaveDir: string,
): string {
  const held = new Map<string, string>([[keys.master.id, describeKeySource(keys.master, 'master', enclaveDir)]]);
  if (keys.next) held.set(keys.next.id, describeKeySource(keys.next, 'next', enclaveDir));
  const sealWith = store.getSealKeyId();
  const needed = new Set(store.keyIdsInUse().filter((id) => id !== UNLABELED_KEY_ID));
  if (sealWith) needed.add(sealWith);
  const missing = [...needed].filter((id) => !held.has(id));
  if (missing.length === 0) return sealWith ?? keys.master.id;
  const heldText = [...held].map(([id, from]) => `${id} (${from})`).join(' and ');
  const nextWay =
    keys.master.source === 'file'
      ? 'master.key.next beside master.key'
      : `${MASTER_KEY_NEXT_ENV} beside the master key`;
  throw new MasterKeyError(
    `the master key does not open this enclave key store: its records are wrapped by master key ` +
      `${missing.join(' and ')}, which this enclave was not given; it holds ${heldText}. Start it with the key whose ` +
      `id is ${sealWith ?? missing[0]} (after a master-key rotation, that is the new key); while a rotation is ` +
      `unfinished, give it both keys (the new one as ${nextWay}).`,
  );
}

/** Creates the rotation over the store (reads), the key writer (writes), the crypto pool and the start keys. */
export function createKeyRotation(deps: {
  store: Pick<
    KeyStore,
    | 'getSealKeyId'
    | 'setSealKeyId'
    | 'labelUnlabeledRows'
    | 'keyIdsInUse'
    | 'rewrapPage'
    | 'sealedKeysNotUnder'
    | 'getEciesKey'
  >;
  writer: Pick<KeyWriter, 'applyRewrap' | 'setSealKeyId' | 'countRowsByKeyId'>;
  crypto: Pick<CryptoPool, 'rewrap' | 'setSealKey' | 'replaceKeys' | 'eciesKeyId' | 'sealWith'>;
  keys: StartKeys;
  enclaveDir: string;
  log: (line: string) => void;
  pageSize?: number;
  /** Pause after each page, as a multiple of the time the page took (default 1). */
  restRatio?: number;
}) {
  const { store, writer, crypto, enclaveDir, log } = deps;
  const pageSize = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  const restRatio = deps.restRatio ?? DEFAULT_REST_RATIO;
  let master: HeldKey = deps.keys.master;
  let next: HeldKey | undefined = deps.keys.next;
  /** Every key this process was given or created: the workers keep them all until the enclave restarts. */
  const everHeld: HeldKey[] = next ? [master, next] : [master];
  let hooks: RotationHooks = { invalidate: () => undefined, settle: async () => undefined };
  let running: Promise<void> | undefined;
  let failure: string | undefined;
  let stopping = false;
  /** rotate() calls run one at a time. */
  let serial: Promise<unknown> = Promise.resolve();
  /** Bumped by every change of state: a count begun before it is not reused after it. */
  let epoch = 0;
  let lastCount: RowCount | undefined;
  let counting: { epoch: number; promise: Promise<RowCount> } | undefined;

  /** Rows per key id, from a recent count (see RECOUNT_AFTER_MS); counted afresh after each change of state. */
  function rowCounts(): Promise<RowCount> {
    if (lastCount?.epoch === epoch && Date.now() - lastCount.at < Math.max(RECOUNT_AFTER_MS, lastCount.tookMs * 10)) {
      return Promise.resolve(lastCount);
    }
    if (counting?.epoch !== epoch) {
      const started = epoch;
      const startedAt = performance.now();
      const promise = writer.countRowsByKeyId().then((rows): RowCount => {
        const count = { epoch: started, at: Date.now(), tookMs: performance.now() - startedAt, rows };
        if (started === epoch) lastCount = count;
        return count;
      });
      counting = { epoch: started, promise };
      const forget = () => {
        if (counting?.promise === promise) counting = undefined;
      };
      promise.then(forget, forget);
    }
    return counting!.promise;
  }

  const sealKeyId = (): string => crypto.sealWith;
  const rowsOutsideSealKey = (): boolean => store.keyIdsInUse().some((id) => id !== sealKeyId());

  function state(): MasterKeyStatus['state'] {
    if (running || rowsOutsideSealKey()) return 'rotating';
    if (sealKeyId() !== master.id) return 'rotated';
    return next && next.id !== sealKeyId() ? 'prepared' : 'idle';
  }

  function action(current: MasterKeyStatus['state']): string {
    const fileKey = master.source === 'file';
    switch (current) {
      case 'idle':
        return fileKey
          ? 'to rotate: npm run admin -- rotate-master-key (the enclave creates master.key.next)'
          : `to rotate: give the enclave a new key as ${MASTER_KEY_NEXT_ENV} (64 hex characters, e.g. openssl rand -hex 32), restart it, then npm run admin -- rotate-master-key`;
      case 'prepared':
        return `back up the new key (${describeKeySource(next!, 'next', enclaveDir)}, id ${next!.id}) apart from the data, then npm run admin -- rotate-master-key --confirm ${next!.id}`;
      case 'rotating':
        return failure
          ? `the rotation stopped: ${failure}; fix it, then npm run admin -- rotate-master-key --confirm ${sealKeyId()}`
          : 'wait: the enclave keeps serving; keep both keys until the rotation is done';
      case 'rotated':
        return next?.source === 'file'
          ? `restart the enclave: it renames master.key.next (id ${sealKeyId()}) over master.key at start${failure ? ` (${failure})` : ''}`
          : `promote the new key: set ENCLAVE_MASTER_KEY to the value of ${MASTER_KEY_NEXT_ENV} (id ${sealKeyId()}), unset ${MASTER_KEY_NEXT_ENV}, restart the enclave`;
    }
  }

  async function status(): Promise<MasterKeyStatus> {
    // State and counts of the same epoch: a count that straddled a change of state is done again.
    let count: RowCount;
    do count = await rowCounts();
    while (count.epoch !== epoch);
    const current = state();
    const result: MasterKeyStatus = {
      state: current,
      masterKeyId: master.id,
      sealingKeyId: sealKeyId(),
      rowsByKeyId: count.rows,
      rowsCountedAt: new Date(count.at).toISOString(),
      action: action(current),
    };
    if (next && next.id !== master.id) result.nextKeyId = next.id;
    if (failure) result.error = failure;
    return result;
  }

  /** Re-wraps one page of rows under the sealing key and commits it; returns the rows changed. */
  async function movePage(rows: readonly RewrapRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    const items = rows.map((row) => {
      if (!row.context)
        throw new Error(`${describeRow(row)} has no known seal context (key-store SEALED_KEY_CONTEXTS)`);
      return { context: row.context, wrapped: row.wrapped };
    });
    const results = await crypto.rewrap(items);
    const updates: RewrapUpdate[] = rows.map((row, i) => {
      const result = results[i]!;
      if (!result.ok) {
        const reason = result.message.split('\n')[0];
        throw new Error(`cannot re-wrap ${describeRow(row)} (wrapped by master key ${row.wrapped.keyId}): ${reason}`);
      }
      return {
        row:
          row.table === 'shares'
            ? { table: 'shares', walletId: row.walletId, kind: row.kind }
            : { table: 'sealed_keys', name: row.name },
        from: { keyId: row.wrapped.keyId, dekIv: row.wrapped.dekIv },
        to: result.value,
      };
    });
    const changed = await writer.applyRewrap(updates);
    // After the commit: a sign that follows reads the new rows (the old ones still open until the restart).
    hooks.invalidate(rows.flatMap((row) => (row.table === 'shares' ? [row.walletId] : [])));
    return changed;
  }

  /** Moves every row to the sealing key, then promotes it. */
  async function rotateRows(): Promise<void> {
    // Generations and migrations begun before the sealing key changed may still commit rows under the old key.
    await hooks.settle();
    const target = sealKeyId();
    let moved = 0;
    for (let pass = 0; rowsOutsideSealKey(); pass++) {
      let passMoved = 0;
      let cursor: RewrapCursor | undefined;
      do {
        if (stopping) return;
        const startedAt = performance.now();
        const page = store.rewrapPage(target, cursor, pageSize);
        passMoved += await movePage(page.rows);
        cursor = page.next;
        // Rest as long as the page took: the rotation takes at most about half of the threads it uses, and
        // requests keep the rest (see test/bench/enclave-rotation.ts).
        await new Promise<void>((resolve) => setTimeout(resolve, (performance.now() - startedAt) * restRatio));
      } while (cursor);
      if (stopping) return;
      passMoved += await movePage(store.sealedKeysNotUnder(target));
      moved += passMoved;
      if (passMoved === 0 && rowsOutsideSealKey()) {
        throw new Error(`rows remain under another master key than ${target} and none could be moved`);
      }
      if (pass > 100) throw new Error('rows keep appearing under the old master key');
    }
    log(`enclave: master-key rotation: every record is now wrapped by master key ${target} (${moved} re-wrapped)`);
    promote();
  }

  /** A file key is promoted by the enclave; a key from outside is promoted by the operator (logged). */
  function promote(): void {
    const target = sealKeyId();
    if (target === master.id) return;
    if (next?.id === target && next.source === 'file') {
      promoteNextMasterKeyFile(enclaveDir);
      log(
        `enclave: master-key rotation done: ${describeKeySource(master, 'master', enclaveDir)} now holds master key ` +
          `${target}; the old key ${master.id} is no longer needed here (it still opens backups of keys.db taken ` +
          'before the rotation: keep or destroy it with them). It stays in this process until the enclave restarts.',
      );
      master = next;
      next = undefined;
      return;
    }
    log(`enclave: master-key rotation done; ${action('rotated')}`);
  }

  function startRows(): void {
    if (running) return;
    failure = undefined;
    epoch++;
    running = rotateRows()
      .catch((error: unknown) => {
        failure = error instanceof Error ? error.message : String(error);
        log(`enclave: master-key rotation stopped: ${error instanceof Error ? error.stack : String(error)}`);
      })
      .finally(() => {
        running = undefined;
        epoch++;
      });
  }

  /** Prepares the next key (creating master.key.next for a file key) if none is held yet. */
  async function prepare(): Promise<HeldKey> {
    if (next) return next;
    if (master.source !== 'file') {
      throw new EnclaveRequestError(
        'NEXT_KEY_MISSING',
        `the master key is given from outside (${describeKeySource(master, 'master', enclaveDir)}): give the new key as ` +
          `${MASTER_KEY_NEXT_ENV} (64 hex characters) and restart the enclave, then ask again`,
      );
    }
    // A file left by an earlier attempt (its key may already be backed up) is used, never replaced.
    const created = existsSync(nextMasterKeyPath(enclaveDir))
      ? readNextMasterKeyFile(enclaveDir)
      : createNextMasterKeyFile(enclaveDir, log);
    everHeld.push(created);
    await crypto.replaceKeys(
      createKeyRing(
        everHeld.map((key) => key.key),
        sealKeyId(),
      ),
    );
    next = created;
    epoch++;
    return created;
  }

  async function rotate(params: { confirmKeyId?: string }): Promise<MasterKeyStatus> {
    const { confirmKeyId } = params;
    const current = state();
    if (current === 'rotating' || current === 'rotated') {
      if (confirmKeyId !== undefined && confirmKeyId !== sealKeyId()) {
        throw new EnclaveRequestError(
          'NEXT_KEY_MISMATCH',
          `a rotation to master key ${sealKeyId()} is under way; confirmKeyId ${confirmKeyId} is not that key`,
        );
      }
      if (current === 'rotating') startRows();
      return status();
    }
    if (confirmKeyId === undefined) {
      await prepare();
      return status();
    }
    // A confirmation never prepares: the operator confirms a key id they were shown and backed up.
    if (!next) {
      if (master.source !== 'file') await prepare(); // throws NEXT_KEY_MISSING
      throw new EnclaveRequestError(
        'NEXT_KEY_MISMATCH',
        `no next key is prepared, so confirmKeyId ${confirmKeyId} names none: ask without confirmKeyId first`,
      );
    }
    const prepared = next;
    if (confirmKeyId !== prepared.id) {
      throw new EnclaveRequestError(
        'NEXT_KEY_MISMATCH',
        `confirmKeyId ${confirmKeyId} is not the id of the prepared next key (${prepared.id})`,
      );
    }
    // Durable first: from this commit on, a restart seals with the new key and resumes the rotation.
    await writer.setSealKeyId(prepared.id);
    crypto.setSealKey(prepared.id);
    log(`enclave: master-key rotation from ${master.id} to ${prepared.id} confirmed: re-wrapping every record`);
    startRows();
    return status();
  }

  return {
    /** Binds the request handler's cache invalidation and its writes under way. */
    bind(bound: RotationHooks): void {
      hooks = bound;
    },

    /**
     * At start, after the ECIES key checked out: labels rows of earlier versions with the key that opens them,
     * records the sealing key of a new store, then resumes an unfinished rotation (in the background) or promotes
     * a finished one whose promotion a crash interrupted.
     */
    async open(): Promise<void> {
      if (store.keyIdsInUse().includes(UNLABELED_KEY_ID)) {
        const ecies = store.getEciesKey();
        const keyId = ecies ? await crypto.eciesKeyId(ecies) : null;
        if (!keyId) throw new MasterKeyError('no master key the enclave holds opens the rows of its key store');
        const labeled = store.labelUnlabeledRows(keyId);
        log(`enclave: ${labeled} records of an earlier version labeled with master key id ${keyId}`);
        // The key that wrapped them keeps sealing until a rotation is confirmed (even if it came as the next key).
        if (!store.getSealKeyId()) crypto.setSealKey(keyId);
      }
      if (!store.getSealKeyId()) store.setSealKeyId(sealKeyId());
      if (rowsOutsideSealKey()) {
        log(`enclave: resuming the master-key rotation to ${sealKeyId()}`);
        startRows();
      } else {
        promote();
      }
    },

    /** Where the master keys stand (and the operator's next step). */
    status,

    /**
     * Without `confirmKeyId`: prepares a rotation (a file key gets master.key.next) and answers its id. With it:
     * starts (or resumes) moving every row to that key; answers at once, the work runs in the background.
     */
    rotate(params: { confirmKeyId?: string }): Promise<MasterKeyStatus> {
      const result = serial.then(() => rotate(params));
      serial = result.catch(() => undefined);
      return result;
    },

    /** Resolves when the rows of the rotation under way (if any) have moved or it stopped (tests, shutdown). */
    async idle(): Promise<void> {
      while (running) await running;
    },

    /** Stops after the page under way (a later start resumes). */
    async close(): Promise<void> {
      stopping = true;
      await serial;
      while (running) await running;
    },
  };
}

export type KeyRotation = ReturnType<typeof createKeyRotation>;
