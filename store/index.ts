import { createActorStore } from './actor-store.ts';
import { createApiKeysRepo } from './api-keys-repo.ts';
import { openServiceDb } from './db.ts';
import { createOutboxRepo } from './outbox-repo.ts';
import { createProjectsRepo } from './projects-repo.ts';
import { createTransactionsRepo } from './transactions-repo.ts';
import { createWalletsRepo } from './wallets-repo.ts';
import { createWriter } from './writer.ts';

/** Opens the service database and wires its repositories and group-commit writer. */
export function createStore(file: string) {
  const { db, sqlite } = openServiceDb(file);
  const writer = createWriter(sqlite, file === ':memory:' ? {} : { walFile: `${file}-wal` });
  return {
    db,
    sqlite,
    writer,
    projects: createProjectsRepo(db),
    apiKeys: createApiKeysRepo(db),
    wallets: createWalletsRepo(db, sqlite),
    actors: createActorStore(sqlite, writer),
    outbox: createOutboxRepo(db, sqlite),
    transactions: createTransactionsRepo(sqlite),
    /** Readiness probe: the database answers a query. */
    ping(): boolean {
      return sqlite.prepare('select 1 as one').get() !== undefined;
    },
    /** Commits what is queued and closes (closing checkpoints the WAL into the database file). */
    close(): void {
      writer.close();
      sqlite.close();
    },
  };
}

export type Store = ReturnType<typeof createStore>;
