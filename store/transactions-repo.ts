import type Database from 'better-sqlite3';
import type {
  FailureStage,
  IntentKind,
  PaymentFamily,
  SolanaNetwork,
  TransactionStatus,
} from '../chains/domain/payments.ts';

/** A transaction record as stored (the `transactions` table, snake_case columns mapped to these names). */
export interface TransactionRow {
  id: string;
  projectId: string;
  apiKeyId: string | null;
  walletId: string;
  intentKind: IntentKind;
  type: PaymentFamily;
  chainKey: string;
  chainId: string | null;
  network: SolanaNetwork | null;
  status: TransactionStatus;
  hash: string | null;
  blockNumber: string | null;
  blockHash: string | null;
  failureStage: FailureStage | null;
  failureCode: string | null;
  failureMessage: string | null;
  /** JSON text. */
  monitoring: string | null;
  toAddress: string | null;
  value: string | null;
  tokenAddress: string | null;
  nonce: number | null;
  recentBlockhash: string | null;
  lastValidBlockHeight: number | null;
  signedTransaction: string | null;
  /** 1 while it holds its wallet and chain. */
  unresolved: number;
  /** 1 while the chain poller looks it up. */
  watched: number;
  /** JSON text: the payment's attempts (null on records older than them). */
  attempts: string | null;
  /** JSON text: an auto-retry payment's retrying (null for other payments). */
  autoRetry: string | null;
  /** A manual cancellation: the record whose nonce it competes for (it holds nothing); null otherwise. */
  cancels: string | null;
  createdAt: string;
  updatedAt: string;
  resolvedAt: string | null;
  seq: number;
}

/** The fields a payment actor's step writes. */
export type TransactionProgress = Pick<
  TransactionRow,
  | 'status'
  | 'hash'
  | 'blockNumber'
  | 'blockHash'
  | 'failureStage'
  | 'failureCode'
  | 'failureMessage'
  | 'monitoring'
  | 'signedTransaction'
  | 'unresolved'
  | 'watched'
  | 'attempts'
  | 'autoRetry'
  | 'updatedAt'
  | 'resolvedAt'
>;

export interface TransactionListFilter {
  status?: TransactionStatus;
  intentKind?: IntentKind;
  /** Only rows with seq below this (newest-first paging). */
  beforeSeq?: number;
  limit: number;
}

/** A record the chain poller looks up. */
export interface WatchedTransaction {
  id: string;
  hash: string;
  from: string;
  nonce: number | null;
  recentBlockhash: string | null;
  lastValidBlockHeight: number | null;
  /** 1 while it holds its wallet: only then does the service send its bytes again. */
  unresolved: number;
  /**
   * An auto-retry payment's attempts (the record's JSON), whose hashes are all candidates for its nonce; null for a
   * payment with one attempt, whose candidate is `hash`.
   */
  attempts: string | null;
  /** The hashes of its manual cancellations (JSON array; auto-retry payments only), candidates too. */
  cancellations: string | null;
}

const COLUMNS = `id, project_id as projectId, api_key_id as apiKeyId, wallet_id as walletId, intent_kind as intentKind,
  type, chain_key as chainKey, chain_id as chainId, network, status, hash, block_number as blockNumber,
  block_hash as blockHash, failure_stage as failureStage, failure_code as failureCode,
  failure_message as failureMessage, monitoring, to_address as toAddress, value, token_address as tokenAddress,
  nonce, recent_blockhash as recentBlockhash, last_valid_block_height as lastValidBlockHeight,
  signed_transaction as signedTransaction, unresolved, watched, attempts,
  auto_retry as autoRetry, cancels, created_at as createdAt, updated_at as updatedAt,
  resolved_at as resolvedAt, seq`;

/**
 * Transaction records. Reads for partners are scoped to a project and a wallet: another partner's record does
 * not exist. Writes run inside the writer's transactions (a record is inserted with its payment actor's initial
 * state and updated with each of its steps).
 */
export function createTransactionsRepo(sqlite: Database.Database) {
  const insertStmt = sqlite.prepare(
    `insert into transactions (id, project_id, api_key_id, wallet_id, intent_kind, type, chain_key, chain_id, network,
      status, hash, block_number, block_hash, failure_stage, failure_code, failure_message, monitoring, to_address,
      value, token_address, nonce, recent_blockhash, last_valid_block_height, signed_transaction, unresolved,
      watched, attempts, auto_retry, cancels, created_at, updated_at, resolved_at, seq)
     values (@id, @projectId, @apiKeyId, @walletId, @intentKind, @type, @chainKey, @chainId, @network, @status, @hash,
      @blockNumber, @blockHash, @failureStage, @failureCode, @failureMessage, @monitoring, @toAddress, @value,
      @tokenAddress, @nonce, @recentBlockhash, @lastValidBlockHeight, @signedTransaction, @unresolved, @watched,
      @attempts, @autoRetry, @cancels, @createdAt, @updatedAt, @resolvedAt, @seq)`,
  );
  const progressStmt = sqlite.prepare(
    `update transactions set status = @status, hash = @hash, block_number = @blockNumber, block_hash = @blockHash,
      failure_stage = @failureStage, failure_code = @failureCode, failure_message = @failureMessage,
      monitoring = @monitoring, signed_transaction = @signedTransaction, unresolved = @unresolved,
      watched = @watched, attempts = @attempts, auto_retry = @autoRetry, updated_at = @updatedAt, resolved_at = @resolvedAt
     where id = @id`,
  );
  const byId = sqlite.prepare(`select ${COLUMNS} from transactions where id = ?`);
  const byWallet = sqlite.prepare(
    `select ${COLUMNS} from transactions where id = ? and project_id = ? and wallet_id = ?`,
  );
  const holder = sqlite.prepare(
    `select t.id, t.nonce from holds h join transactions t on t.id = h.holder_id
     where h.wallet_id = ? and h.chain_key = ?`,
  );
  const takeHold = sqlite.prepare(
    'insert into holds (wallet_id, chain_key, holder_id, created_at) values (@walletId, @chainKey, @id, @createdAt)',
  );
  const dropHold = sqlite.prepare('delete from holds where holder_id = ?');
  const handHold = sqlite.prepare('update holds set holder_id = @id where holder_id = @follows');
  const maxNonce = sqlite.prepare(
    `select max(nonce) as n from transactions
     where wallet_id = ? and chain_key = ? and nonce is not null and status in ('confirmed', 'reverted')`,
  );
  const watchStmt = sqlite.prepare(
    `select t.id, t.seq, t.hash, w.address as "from", t.nonce, t.recent_blockhash as recentBlockhash,
       t.last_valid_block_height as lastValidBlockHeight, t.unresolved,
       case when t.auto_retry is not null then t.attempts end as attempts,
       case when t.auto_retry is not null then (select json_group_array(c.hash) from transactions c
         where c.cancels = t.id and c.hash is not null) end as cancellations
     from transactions t join wallets w on w.id = t.wallet_id
     where t.chain_key = ? and t.watched = 1 and t.hash is not null and t.seq > ?
     order by t.seq limit ?`,
  );
  const signedStmt = sqlite.prepare('select signed_transaction as signed from transactions where id = ?');
  const releaseStmt = sqlite.prepare(
    'update transactions set unresolved = 0, watched = 0, updated_at = ?, resolved_at = coalesce(resolved_at, ?) where id = ?',
  );
  const maxSeq = sqlite.prepare('select max(seq) as m from transactions');
  let lastSeq: number | undefined;

  return {
    /**
     * Inside a transaction. A record inserted unresolved takes the hold of its wallet and chain: a unique violation
     * of `holds` (isHoldViolation) when another record holds them.
     */
    insert(row: TransactionRow, opts: { follows?: string | null } = {}): void {
      insertStmt.run(row);
      // A cancellation competes for the holder's nonce beside it: the holder keeps the hold.
      if (row.unresolved !== 1 || row.cancels !== null) return;
      // The next step of a yield operation takes the hold over from the step it follows (still unresolved until final,
      // and still watched and resent): no other payment comes between them.
      if (opts.follows && handHold.run({ id: row.id, follows: opts.follows }).changes === 1) return;
      takeHold.run(row);
    },
    nextSeq(): number {
      if (lastSeq === undefined) lastSeq = (maxSeq.get() as { m: number | null }).m ?? 0;
      lastSeq += 1;
      return lastSeq;
    },
    /** Inside a transaction. */
    progress(id: string, p: TransactionProgress): void {
      progressStmt.run({ id, ...p });
      if (p.unresolved === 0) dropHold.run(id);
    },
    /** Inside a transaction: the operator released (abandoned) the payment. */
    release(id: string, at: string): void {
      releaseStmt.run(at, at, id);
      dropHold.run(id);
    },
    getAny(id: string): TransactionRow | undefined {
      return byId.get(id) as TransactionRow | undefined;
    },
    get(projectId: string, walletId: string, id: string): TransactionRow | undefined {
      return byWallet.get(id, projectId, walletId) as TransactionRow | undefined;
    },
    /** The unresolved record holding the wallet on that chain, if any. */
    holder(walletId: string, chainKey: string): string | undefined {
      return (holder.get(walletId, chainKey) as { id: string } | undefined)?.id;
    },
    /** The unresolved record holding the wallet on that chain, with the nonce it signs with (EVM), if any. */
    holding(walletId: string, chainKey: string): { id: string; nonce: number | null } | undefined {
      return holder.get(walletId, chainKey) as { id: string; nonce: number | null } | undefined;
    },
    /** The highest nonce a settled record of the wallet on that chain used (EVM), or null. */
    highestSettledNonce(walletId: string, chainKey: string): number | null {
      return (maxNonce.get(walletId, chainKey) as { n: number | null }).n;
    },
    /** Watched records with a hash on a chain, in insertion order after `afterSeq` (the poller's pages). */
    watched(chainKey: string, afterSeq: number, limit: number): Array<WatchedTransaction & { seq: number }> {
      return watchStmt.all(chainKey, afterSeq, limit) as Array<WatchedTransaction & { seq: number }>;
    },
    /** The stored signed bytes of a record (null before it is signed). */
    signedTransaction(id: string): string | null {
      return (signedStmt.get(id) as { signed: string | null } | undefined)?.signed ?? null;
    },
    list(projectId: string, walletId: string, f: TransactionListFilter): TransactionRow[] {
      const where = ['project_id = ?', 'wallet_id = ?'];
      const params: Array<string | number> = [projectId, walletId];
      if (f.status !== undefined) {
        where.push('status = ?');
        params.push(f.status);
      }
      if (f.intentKind !== undefined) {
        where.push('intent_kind = ?');
        params.push(f.intentKind);
      }
      if (f.beforeSeq !== undefined) {
        where.push('seq < ?');
        params.push(f.beforeSeq);
      }
      params.push(f.limit);
      return sqlite
        .prepare(`select ${COLUMNS} from transactions where ${where.join(' and ')} order by seq desc limit ?`)
        .all(...params) as TransactionRow[];
    },
  };
}

export type TransactionsRepo = ReturnType<typeof createTransactionsRepo>;
