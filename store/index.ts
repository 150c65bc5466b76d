import { createActorStore } from './actor-store.ts';
import { createApiKeysRepo } from './api-keys-repo.ts';
import { type ApprovalLifetimes, createApprovalsRepo } from './approvals-repo.ts';
import { startCheckpointer } from './checkpointer.ts';
import { openServiceDb } from './db.ts';
import { createIdempotencyRepo } from './idempotency-repo.ts';
import { createOutboxRepo } from './outbox-repo.ts';
import { createPoliciesRepo } from './policies-repo.ts';
import { createPolicyDecisionsRepo } from './policy-decisions-repo.ts';
import { createProjectsRepo } from './projects-repo.ts';
import { createSpendRepo } from './spend-repo.ts';
import { createTransactionsRepo } from './transactions-repo.ts';
import { createWalletsRepo } from './wallets-repo.ts';
import { createWebhooksRepo } from './webhooks-repo.ts';
import { createWriter } from './writer.ts';
import { createYieldRepo } from './yield-repo.ts';

/**
 * Opens the service database and wires its repositories and group-commit writer. `checkpointOffThread`: the WAL is
 * checkpointed by a worker thread instead of inside the commits of the event loop (the service does this; tests
 * of single parts keep SQLite's automatic checkpoint). `approvals`: the lifetimes of approval cases and reviews
 * (APPROVAL_CASE_TTL_MS, REVIEW_TTL_MS; default seven days and 24 hours).
 */
export function createStore(file: string, opts: { checkpointOffThread?: boolean; approvals?: ApprovalLifetimes } = {}) {
  const { db, sqlite } = openServiceDb(file);
  let checkpointer: ReturnType<typeof startCheckpointer> | undefined;
  if (opts.checkpointOffThread && file !== ':memory:') {
    sqlite.pragma('wal_autocheckpoint = 0');
    checkpointer = startCheckpointer({
      file,
      // Without the worker, SQLite checkpoints in the commits again: slower at times, never unbounded.
      onFailure: () => sqlite.pragma('wal_autocheckpoint = 1000'),
    });
  }
  const writer = createWriter(sqlite, file === ':memory:' ? {} : { walFile: `${file}-wal` });
  return {
    db,
    sqlite,
    writer,
    projects: createProjectsRepo(db),
    apiKeys: createApiKeysRepo(db),
    wallets: createWalletsRepo(db, sqlite),
    actors: createActorStore(sqlite, writer),
    outbox: createOutboxRepo(db, sqlite, writer),
    transactions: createTransactionsRepo(sqlite),
    webhooks: createWebhooksRepo(sqlite),
    idempotency: createIdempotencyRepo(sqlite),
    approvals: createApprovalsRepo(sqlite, opts.approvals),
    /** Signing policies and the keys' permission switches; also the decision point's PolicySource. */
    policies: createPoliciesRepo(sqlite),
    spend: createSpendRepo(sqlite),
    policyDecisions: createPolicyDecisionsRepo(sqlite),
    /** Yield operations and the operator's per-chain yield switches. */
    yieldOps: createYieldRepo(sqlite),
    /** Readiness probe: the database answers a query. */
    ping(): boolean {
      return sqlite.prepare('select 1 as one').get() !== undefined;
    },
    /** Commits what is queued and closes (closing checkpoints the WAL into the database file). */
    close(): void {
      checkpointer?.terminate();
      writer.close();
      sqlite.close();
    },
  };
}

export type Store = ReturnType<typeof createStore>;
