import type Database from 'better-sqlite3';
import type { YieldAction, YieldStatus, YieldStepKind } from '../chains/domain/yield.ts';
import { isUniqueViolation } from './errors.ts';

/** One transaction of an operation: its kind and its record. */
export interface YieldStepRef {
  kind: YieldStepKind;
  transactionId: string;
}

/** Why an operation stopped or waits (spec: Yield operation `error`). */
export interface YieldError {
  code: string;
  message: string;
  reviewId?: string;
  caseId?: string;
  /** The step it concerns, when one does. */
  transactionId?: string;
}

export interface YieldOperationRow {
  id: string;
  projectId: string;
  apiKeyId: string | null;
  walletId: string;
  chainId: number;
  action: YieldAction;
  amount: string;
  idempotencyKey: string;
  fingerprint: string;
  status: YieldStatus;
  active: boolean;
  error: YieldError | null;
  steps: YieldStepRef[];
  createdAt: string;
  updatedAt: string;
}

interface RawRow extends Omit<YieldOperationRow, 'active' | 'error' | 'steps'> {
  active: number;
  error: string | null;
  steps: string;
}

const COLUMNS = `id, project_id as projectId, api_key_id as apiKeyId, wallet_id as walletId, chain_id as chainId, action,
  amount, idempotency_key as idempotencyKey, fingerprint, status, active, error, steps, created_at as createdAt,
  updated_at as updatedAt`;

function toRow(r: RawRow | undefined): YieldOperationRow | undefined {
  if (!r) return undefined;
  return {
    ...r,
    active: r.active === 1,
    error: r.error === null ? null : (JSON.parse(r.error) as YieldError),
    steps: JSON.parse(r.steps) as YieldStepRef[],
  };
}

/** A unique violation of the one-active-operation-per-wallet-and-chain index. */
export function isActiveOperationViolation(err: unknown): boolean {
  return (
    isUniqueViolation(err) && /yield_operations\.wallet_id, yield_operations\.chain_id$/.test((err as Error).message)
  );
}

/** A unique violation of the per-project `Idempotency-Key` index. */
export function isYieldKeyViolation(err: unknown): boolean {
  return (
    isUniqueViolation(err) &&
    /yield_operations\.project_id, yield_operations\.idempotency_key$/.test((err as Error).message)
  );
}

/**
 * The `yield_operations` and `yield_chain_switches` tables. Writes are synchronous and meant for a writer transaction
 * (an operation's row is written by its actor's definition, with its state).
 */
export function createYieldRepo(sqlite: Database.Database) {
  const insertStmt = sqlite.prepare(
    `insert into yield_operations (id, project_id, api_key_id, wallet_id, chain_id, action, amount, idempotency_key,
       fingerprint, status, active, error, steps, created_at, updated_at, seq)
     values (@id, @projectId, @apiKeyId, @walletId, @chainId, @action, @amount, @idempotencyKey, @fingerprint, @status,
       @active, @error, @steps, @createdAt, @updatedAt,
       coalesce((select max(seq) from yield_operations), 0) + 1)`,
  );
  const updateStmt = sqlite.prepare(
    `update yield_operations set status = @status, active = @active, error = @error, steps = @steps,
       updated_at = @updatedAt where id = @id`,
  );
  const getStmt = sqlite.prepare(`select ${COLUMNS} from yield_operations where project_id = ? and id = ?`);
  const getAnyStmt = sqlite.prepare(`select ${COLUMNS} from yield_operations where id = ?`);
  const byKeyStmt = sqlite.prepare(
    `select ${COLUMNS} from yield_operations where project_id = ? and idempotency_key = ?`,
  );
  const activeOnStmt = sqlite.prepare(
    'select id from yield_operations where wallet_id = ? and chain_id = ? and active = 1 and id <> ?',
  );
  const aheadStmt = sqlite.prepare(
    `select id from yield_operations where wallet_id = @walletId and active = 1 and chain_id <> @chainId
       and seq < (select seq from yield_operations where id = @id) order by seq limit 1`,
  );
  const switchStmt = sqlite.prepare('select disabled, reason from yield_chain_switches where chain_id = ?');
  const setSwitchStmt = sqlite.prepare(
    `insert into yield_chain_switches (chain_id, disabled, reason, updated_at) values (?, ?, ?, ?)
     on conflict (chain_id) do update set disabled = excluded.disabled, reason = excluded.reason,
       updated_at = excluded.updated_at`,
  );
  const switchesStmt = sqlite.prepare(
    'select chain_id as chainId, disabled, reason, updated_at as updatedAt from yield_chain_switches order by chain_id',
  );

  return {
    /**
     * Inside a transaction. Throws the unique violations `isActiveOperationViolation` (another active operation on the
     * wallet and chain) and `isYieldKeyViolation` (the key names another operation).
     */
    insert(row: Omit<YieldOperationRow, 'updatedAt'>): void {
      insertStmt.run({
        ...row,
        active: row.active ? 1 : 0,
        error: row.error === null ? null : JSON.stringify(row.error),
        steps: JSON.stringify(row.steps),
        updatedAt: row.createdAt,
      });
    },
    update(
      id: string,
      fields: Pick<YieldOperationRow, 'status' | 'active' | 'error' | 'steps'> & { updatedAt: string },
    ): void {
      updateStmt.run({
        id,
        status: fields.status,
        active: fields.active ? 1 : 0,
        error: fields.error === null ? null : JSON.stringify(fields.error),
        steps: JSON.stringify(fields.steps),
        updatedAt: fields.updatedAt,
      });
    },
    /** The project's operation, or undefined (another project's is as missing). */
    get(projectId: string, id: string): YieldOperationRow | undefined {
      return toRow(getStmt.get(projectId, id) as RawRow | undefined);
    },
    getAny(id: string): YieldOperationRow | undefined {
      return toRow(getAnyStmt.get(id) as RawRow | undefined);
    },
    /** The operation an `Idempotency-Key` names in a project. */
    byKey(projectId: string, key: string): YieldOperationRow | undefined {
      return toRow(byKeyStmt.get(projectId, key) as RawRow | undefined);
    },
    /** Another active operation of the wallet on the chain than `exceptId`, if any. */
    activeOn(walletId: string, chainId: number, exceptId = ''): string | undefined {
      return (activeOnStmt.get(walletId, chainId, exceptId) as { id: string } | undefined)?.id;
    },
    /** An active operation of the same wallet on another chain admitted before `id`: `id` waits for it. */
    aheadOf(id: string, walletId: string, chainId: number): string | undefined {
      return (aheadStmt.get({ id, walletId, chainId }) as { id: string } | undefined)?.id;
    },
    /** Whether the operator disabled new yield operations on the chain, and why. */
    disabled(chainId: number): { reason: string | null } | undefined {
      const r = switchStmt.get(chainId) as { disabled: number; reason: string | null } | undefined;
      return r && r.disabled === 1 ? { reason: r.reason } : undefined;
    },
    setDisabled(chainId: number, disabled: boolean, reason: string | null, at: string): void {
      setSwitchStmt.run(chainId, disabled ? 1 : 0, reason, at);
    },
    switches(): Array<{ chainId: number; disabled: boolean; reason: string | null; updatedAt: string }> {
      return (
        switchesStmt.all() as Array<{ chainId: number; disabled: number; reason: string | null; updatedAt: string }>
      ).map((r) => ({ ...r, disabled: r.disabled === 1 }));
    },
  };
}

export type YieldRepo = ReturnType<typeof createYieldRepo>;
