/**
 * Steps the end-to-end specs share: reading the service's database as it stands, creating and activating a signing
 * policy over the API, and polling a yield operation until it gets somewhere.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { TestService } from './service.ts';

/** Rows of `sql` from the service database of `dataDir`, opened read-only for this one query. */
export function queryServiceDb<T>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Creates `policy` with the key `secret` and activates it (201, then 200, asserted); answers the active policy. */
export async function createActivePolicy(
  svc: Pick<TestService, 'v1'>,
  secret: string,
  policy: unknown,
): Promise<{ id: string; revision: number } & Record<string, unknown>> {
  const created = await svc.v1(secret, 'POST', '/permissions-v2/policies', { policy });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const active = await svc.v1(secret, 'POST', `/permissions-v2/policies/${created.body.id}/activate`, {
    expectedRevision: created.body.revision,
  });
  assert.equal(active.status, 200, JSON.stringify(active.body));
  return active.body;
}

/** The operation has left `pending` and `submitted`. */
export const operationEnded = (op: any): boolean => op.status !== 'pending' && op.status !== 'submitted';

/**
 * Reads a yield operation with `read` every `everyMs` until `until` holds (default: it has left pending and
 * submitted), and answers it; fails with its last state after `timeoutMs`.
 */
export async function settleOperation(
  read: () => Promise<any>,
  until: (op: any) => boolean = operationEnded,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const op = await read();
    if (until(op)) return op;
    if (Date.now() > deadline) assert.fail(`operation ${op.id} still ${op.status}: ${JSON.stringify(op)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
