import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { createStore, type Store } from '../../store/index.ts';
import { createWriter } from '../../store/writer.ts';
import { createAuthenticator } from '../plugins/auth.ts';
import { createAdminService } from './admin.ts';
import type { WebhookService } from './webhooks.ts';

// The writer can commit a batch and still reject it (STORE_SYNC_FAILED: the fsync after COMMIT failed).
// The change is then in the database: the authenticator must not keep answering from what it cached.

let dir: string;
let store: Store;
/** Syncs fail while set: every write commits, then rejects with STORE_SYNC_FAILED. */
let syncFails = false;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-admin-'));
  const file = path.join(dir, 'service.db');
  const real = createStore(file);
  const writer = createWriter(real.sqlite, {
    walFile: `${file}-wal`,
    datasync: (fd, cb) => (syncFails ? cb(Object.assign(new Error('EIO'), { code: 'EIO' })) : fs.fdatasync(fd, cb)),
  });
  store = { ...real, writer };
});
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const request = (secret: string, ip = '127.0.0.1') =>
  ({ headers: { 'x-api-key': secret }, ip }) as unknown as FastifyRequest;

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return 'admitted';
  } catch (err) {
    return (err as { code: string }).code;
  }
}

/** The lists are not exercised here: no key has a webhook endpoint. */
const noWebhooks = { summaryOf: () => null } satisfies Pick<WebhookService, 'summaryOf'>;

/** The master-key verbs are not exercised here. */
const unusedEnclave = {
  masterKeyStatus: () => Promise.reject(new Error('unused')),
  rotateMasterKey: () => Promise.reject(new Error('unused')),
};

describe('admin changes clear the auth cache even when the sync after COMMIT fails', () => {
  async function partner() {
    const authenticator = createAuthenticator(store);
    const admin = createAdminService({ store, authenticator, enclave: unusedEnclave, webhooks: noWebhooks });
    const project = await admin.createProject({ name: 'p', plan: 'growth' });
    const key = await admin.createApiKey(project.id, 'production');
    // Authenticated once: the key is now in the authenticator's cache.
    assert.equal(
      codeOf(() => authenticator.authenticate(request(key.secretKey))),
      'admitted',
    );
    return { authenticator, admin, project, key };
  }

  async function failingSync<T>(write: () => Promise<T>): Promise<void> {
    syncFails = true;
    try {
      await assert.rejects(write(), (err: { code: string }) => err.code === 'STORE_SYNC_FAILED');
    } finally {
      syncFails = false;
    }
  }

  test('rotation: the old secret is refused at once', async () => {
    const { authenticator, admin, key } = await partner();
    await failingSync(() => admin.rotateApiKey(key.id));
    assert.equal(
      codeOf(() => authenticator.authenticate(request(key.secretKey))),
      'INVALID_API_KEY',
    );
  });

  test('project deletion: its keys are refused at once', async () => {
    const { authenticator, admin, project, key } = await partner();
    await failingSync(() => admin.deleteProject(project.id));
    assert.equal(
      codeOf(() => authenticator.authenticate(request(key.secretKey))),
      'INVALID_API_KEY',
    );
  });

  test('IP allowlist: the new list applies at once', async () => {
    const { authenticator, admin, project, key } = await partner();
    await failingSync(() => admin.setIpAllowlist(project.id, ['10.0.0.0/8']));
    assert.equal(
      codeOf(() => authenticator.authenticate(request(key.secretKey))),
      'IP_NOT_ALLOWED',
    );
    assert.equal(
      codeOf(() => authenticator.authenticate(request(key.secretKey, '10.1.2.3'))),
      'admitted',
    );
  });
});
