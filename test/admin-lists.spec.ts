/**
 * The operator's lists over HTTP and from the CLI: `GET /admin/v1/projects` and
 * `GET /admin/v1/projects/{projectId}/api-keys` show what was created (plans, limits, allowlists, deletion, keys,
 * rotation, webhook state), page with their cursors, answer 404 for a project that is not there, and never carry a
 * secret: neither a key's secret nor its hash nor a webhook's `whsec_` secret, which the test first makes exist.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { nodeArgs } from './helpers/entry.ts';
import { ROOT, startTestService, type TestService } from './helpers/service.ts';

const run = promisify(execFile);

let svc: TestService;
let receiver: WebhookReceiver;
/** Answers every delivery 500, so the endpoints pointed at it become `failing`. */
let failingReceiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver();
  failingReceiver = await startWebhookReceiver({ mode: { kind: 'error', status: 500 } });
  svc = await startTestService(
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
});

after(async () => {
  await svc?.stop();
  await receiver?.close();
  await failingReceiver?.close();
});

type Body = Record<string, any>;

async function ok(method: string, route: string, body?: unknown, status = method === 'POST' ? 201 : 200) {
  const r = await svc.admin(method, route, body);
  assert.equal(r.status, status, `${method} ${route}: ${JSON.stringify(r.body)}`);
  return r.body as Body;
}

/** Every row of an admin list, following its cursor with pages of `limit`; checks the envelope on the way. */
async function all(route: string, limit = 100, query = ''): Promise<Body[]> {
  const rows: Body[] = [];
  let cursor: string | null = null;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 1000, 'the cursor ends');
    const q = `limit=${limit}${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await ok('GET', `${route}?${q}`);
    assert.equal(page.pagination.limit, limit);
    assert.ok(page.data.length <= limit);
    rows.push(...page.data);
    cursor = page.pagination.cursor;
    assert.equal(page.pagination.hasMore, cursor !== null);
    if (!cursor) return rows;
  }
}

async function createProject(body: Body) {
  return ok('POST', '/projects', body);
}

async function createKey(projectId: string, environment = 'development') {
  return ok('POST', `/projects/${projectId}/api-keys`, { environment });
}

/** Polls the project's key list until `pred` holds for key `keyId`; answers that row. */
async function keyRowWhen(projectId: string, keyId: string, pred: (row: Body) => boolean, what: string) {
  const until = Date.now() + 10_000;
  for (;;) {
    const row = (await all(`/projects/${projectId}/api-keys`)).find((k) => k.id === keyId);
    if (row && pred(row)) return row;
    assert.ok(Date.now() < until, `${what}: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /admin/v1/projects', () => {
  test('lists every project as created: plan, limit, allowlist, key count, live or deleted', async () => {
    const growth = await createProject({ name: 'lists-growth', plan: 'growth' });
    await createKey(growth.id);
    await createKey(growth.id, 'production');
    const own = await createProject({ name: 'lists-enterprise', plan: 'enterprise', rateLimitPerMinute: 5000 });
    await ok('PUT', `/projects/${own.id}/ip-allowlist`, { cidrs: ['10.1.2.3/8', '::1'] });
    const gone = await createProject({ name: 'lists-deleted' });
    await createKey(gone.id);
    await ok('DELETE', `/projects/${gone.id}`, undefined, 204);

    const rows = await all('/projects');
    const byId = new Map(rows.map((p) => [p.id, p]));
    assert.deepEqual(byId.get(growth.id), {
      ...growth,
      ipAllowlist: [],
      apiKeyCount: 2,
      deletedAt: null,
    });
    assert.deepEqual(byId.get(own.id), {
      ...own,
      rateLimitPerMinute: 5000,
      ipAllowlist: ['10.0.0.0/8', '::1/128'],
      apiKeyCount: 0,
      deletedAt: null,
    });
    const deleted = byId.get(gone.id)!;
    assert.equal(deleted.plan, 'free');
    assert.equal(deleted.rateLimitPerMinute, 30);
    assert.equal(deleted.apiKeyCount, 1);
    assert.match(deleted.deletedAt, /^\d{4}-\d\d-\d\dT/);
    assert.ok(deleted.deletedAt >= deleted.createdAt);
    // Oldest first.
    const order = [growth.id, own.id, gone.id].map((id) => rows.findIndex((p) => p.id === id));
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
    );

    const live = await all('/projects', 100, 'deleted=false');
    assert.ok(live.some((p) => p.id === growth.id));
    assert.ok(live.every((p) => p.deletedAt === null));
    const dead = await all('/projects', 100, 'deleted=true');
    assert.ok(dead.some((p) => p.id === gone.id));
    assert.ok(dead.every((p) => p.deletedAt !== null));
    assert.equal(live.length + dead.length, rows.length);
  });

  test('pages of one follow the cursor through every project once; a foreign or forged cursor is a 400', async () => {
    for (let i = 0; i < 3; i++) await createProject({ name: `lists-page-${i}` });
    const whole = await all('/projects');
    assert.ok(whole.length >= 3);
    const paged = await all('/projects', 1);
    assert.deepEqual(
      paged.map((p) => p.id),
      whole.map((p) => p.id),
    );
    const first = await ok('GET', '/projects?limit=1');
    assert.equal(first.pagination.hasMore, true);
    const twoKeys = await createProject({ name: 'lists-page-keys' });
    await createKey(twoKeys.id);
    await createKey(twoKeys.id);
    const keyCursor = (await ok('GET', `/projects/${twoKeys.id}/api-keys?limit=1`)).pagination.cursor;
    assert.ok(keyCursor);
    for (const cursor of [keyCursor, 'not-a-cursor', Buffer.from('p:x').toString('base64url')]) {
      const r = await svc.admin('GET', `/projects?cursor=${cursor}`);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.code, 'INVALID_CURSOR');
    }
    for (const q of ['limit=0', 'limit=101', 'deleted=yes', 'plan=free']) {
      const r = await svc.admin('GET', `/projects?${q}`);
      assert.equal(r.status, 400, `${q}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'INVALID_REQUEST');
    }
  });
});

describe('GET /admin/v1/projects/{projectId}/api-keys', () => {
  test('each key with its environment, rotation and webhook state; 404 for an unknown or deleted project', async () => {
    const p = await createProject({ name: 'lists-keys', plan: 'growth' });
    const plain = await createKey(p.id);
    const rotated = await createKey(p.id, 'production');
    await ok('POST', `/api-keys/${rotated.id}/rotate`, undefined, 200);
    const hooked = await createKey(p.id);
    await ok('PUT', `/api-keys/${hooked.id}/webhook`, {
      url: `${receiver.url}/lists-hooked`,
      events: ['wallet.created', 'user.created'],
    });
    const off = await createKey(p.id);
    await ok('PUT', `/api-keys/${off.id}/webhook`, {
      url: `${receiver.url}/lists-off`,
      events: ['send.confirmed'],
      enabled: false,
      signatureFormat: 'standard-webhooks',
    });
    const failing = await createKey(p.id);
    await ok('PUT', `/api-keys/${failing.id}/webhook`, { url: failingReceiver.url, events: ['wallet.created'] });
    for (let i = 0; i < 6; i++) await ok('POST', `/api-keys/${failing.id}/webhook/test`, undefined, 202);

    const failingRow = await keyRowWhen(p.id, failing.id, (k) => k.webhook?.state === 'failing', 'the endpoint fails');
    assert.ok(failingRow.webhook.consecutiveFailures >= 1, JSON.stringify(failingRow.webhook));
    assert.match(failingRow.webhook.nextProbeAt, /^\d{4}-/);
    assert.ok(failingRow.webhook.deliveries.pending > 0);

    const rows = await all(`/projects/${p.id}/api-keys`);
    assert.deepEqual(
      rows.map((k) => k.id),
      [plain.id, rotated.id, hooked.id, off.id, failing.id],
      'every key, oldest first',
    );
    const byId = new Map(rows.map((k) => [k.id, k]));
    assert.deepEqual(byId.get(plain.id), {
      id: plain.id,
      projectId: p.id,
      environment: 'development',
      createdAt: plain.createdAt,
      rotatedAt: null,
      webhook: null,
    });
    const r = byId.get(rotated.id)!;
    assert.equal(r.environment, 'production');
    assert.match(r.rotatedAt, /^\d{4}-\d\d-\d\dT/);
    assert.ok(r.rotatedAt >= r.createdAt);
    assert.equal(r.webhook, null);

    const h = byId.get(hooked.id)!.webhook;
    assert.equal(h.url, `${receiver.url}/lists-hooked`);
    assert.deepEqual(h.events, ['wallet.created', 'user.created']);
    assert.deepEqual(
      h.warnings.map((w: Body) => w.event),
      ['user.created'],
    );
    assert.equal(h.enabled, true);
    assert.equal(h.state, 'healthy');
    assert.equal(h.signatureFormat, 'timestamp-body');
    // The same view as GET …/webhook.
    assert.deepEqual(h, await ok('GET', `/api-keys/${hooked.id}/webhook`));

    const o = byId.get(off.id)!.webhook;
    assert.equal(o.enabled, false);
    assert.equal(o.signatureFormat, 'standard-webhooks');
    assert.deepEqual(o.events, ['send.confirmed']);

    const paged = await all(`/projects/${p.id}/api-keys`, 2);
    assert.deepEqual(
      paged.map((k) => k.id),
      rows.map((k) => k.id),
    );

    const unknown = await svc.admin('GET', '/projects/no-such-project/api-keys');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'PROJECT_NOT_FOUND');
    await ok('DELETE', `/projects/${p.id}`, undefined, 204);
    const deleted = await svc.admin('GET', `/projects/${p.id}/api-keys`);
    assert.equal(deleted.status, 404);
    assert.equal(deleted.body.code, 'PROJECT_NOT_FOUND');
  });
});

/** Every string in a JSON value, keys included. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      strings(x, out);
    }
  }
  return out;
}

test('neither list ever carries a key secret, its random part, its SHA-256, or a webhook secret', async () => {
  const p = await createProject({ name: 'lists-secrets', plan: 'growth' });
  const dev = await createKey(p.id);
  const prod = await createKey(p.id, 'production');
  const rotated = await ok('POST', `/api-keys/${prod.id}/rotate`, undefined, 200);
  const hook = await ok('PUT', `/api-keys/${dev.id}/webhook`, {
    url: `${receiver.url}/lists-secrets`,
    events: ['wallet.created'],
  });
  const next = await ok('POST', `/api-keys/${dev.id}/webhook/rotate-secret`, undefined, 200);

  const keySecrets: string[] = [dev.secretKey, prod.secretKey, rotated.secretKey];
  const hookSecrets: string[] = [hook.secret, next.secret];
  for (const s of keySecrets) assert.match(s, /^sk_(dev|live)_[A-Za-z0-9_-]{43}$/);
  for (const s of hookSecrets) assert.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const hashes = keySecrets.map((s) => createHash('sha256').update(s).digest('hex'));
  // The material looked for is what the service holds: the current hashes and webhook secrets are in its database.
  const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
  try {
    const held = (sql: string, id: string) => (db.prepare(sql).get(id) as Record<string, string>)['v'];
    assert.equal(held('select secret_hash as v from api_keys where id = ?', dev.id), hashes[0]);
    assert.equal(held('select secret_hash as v from api_keys where id = ?', prod.id), hashes[2]);
    assert.equal(held('select secret as v from webhook_endpoints where api_key_id = ?', dev.id), next.secret);
    assert.equal(held('select previous_secret as v from webhook_endpoints where api_key_id = ?', dev.id), hook.secret);
  } finally {
    db.close();
  }
  const forbidden = [
    ...keySecrets,
    ...keySecrets.map((s) => s.replace(/^sk_(dev|live)_/, '')),
    ...hashes,
    ...hashes.map((h) => h.toUpperCase()),
    ...hookSecrets,
    ...hookSecrets.map((s) => s.slice('whsec_'.length)),
  ];

  const answers = [await all('/projects'), await all(`/projects/${p.id}/api-keys`)];
  const keys = answers[1]!;
  assert.equal(keys.length, 2);
  assert.equal(
    keys.find((k) => k.id === dev.id)!.webhook.url,
    `${receiver.url}/lists-secrets`,
    'the webhook is listed',
  );
  for (const answer of answers) {
    const text = JSON.stringify(answer);
    for (const s of strings(answer)) {
      for (const f of forbidden) assert.equal(s.includes(f), false, `a listed string carries secret material: ${s}`);
      assert.doesNotMatch(s, /sk_(dev|live)_|whsec_/);
    }
    for (const field of ['"secret"', '"secretKey"', '"secretHash"', '"previousSecret"']) {
      assert.equal(text.includes(`${field}:`), false, `no ${field} field`);
    }
  }
});

describe('the CLI verbs list-projects and list-keys', () => {
  const cli = async (...args: string[]): Promise<string> =>
    (
      await run(process.execPath, nodeArgs('bin/admin', ...args, '--url', svc.adminUrl), {
        cwd: ROOT,
        env: { ...process.env, ADMIN_TOKEN: svc.adminToken },
      })
    ).stdout;

  test('print every project and every key of one as tables, or the rows as JSON; never a secret', async () => {
    const p = await createProject({ name: 'lists-cli', plan: 'scale', rateLimitPerMinute: 750 });
    await ok('PUT', `/projects/${p.id}/ip-allowlist`, { cidrs: ['192.168.0.0/16'] });
    const plain = await createKey(p.id, 'production');
    const rotated = await createKey(p.id);
    const newSecret = (await ok('POST', `/api-keys/${rotated.id}/rotate`, undefined, 200)).secretKey;
    const hook = await ok('PUT', `/api-keys/${plain.id}/webhook`, {
      url: `${receiver.url}/lists-cli`,
      events: ['wallet.created', 'send.failed'],
    });
    const gone = await createProject({ name: 'lists-cli-gone' });
    await ok('DELETE', `/projects/${gone.id}`, undefined, 204);

    const projects = await cli('list-projects');
    assert.match(projects, /^PROJECT\s+NAME\s+PLAN\s+REQ\/MIN\s+KEYS\s+ALLOWLIST\s+CREATED\s+STATE$/m);
    assert.match(
      projects,
      new RegExp(`^${p.id}\\s+lists-cli\\s+scale\\s+750\\s+2\\s+192\\.168\\.0\\.0/16\\s+${p.createdAt}\\s+live$`, 'm'),
    );
    assert.match(
      projects,
      new RegExp(`^${gone.id}\\s+lists-cli-gone\\s+free\\s+30\\s+0\\s+any\\s+\\S+\\s+deleted \\d{4}-`, 'm'),
    );
    const projectRows = JSON.parse(await cli('list-projects', '--json')) as Body[];
    assert.deepEqual(
      projectRows.map((r) => r.id),
      (await all('/projects')).map((r) => r.id),
    );

    const keys = await cli('list-keys', p.id);
    assert.match(keys, /^KEY\s+ENVIRONMENT\s+CREATED\s+ROTATED\s+WEBHOOK\s+STATE\s+URL\s+EVENTS$/m);
    assert.match(
      keys,
      new RegExp(
        `^${plain.id}\\s+production\\s+${plain.createdAt}\\s+never\\s+enabled\\s+healthy\\s+${receiver.url}/lists-cli\\s+wallet\\.created,send\\.failed$`,
        'm',
      ),
    );
    assert.match(
      keys,
      new RegExp(`^${rotated.id}\\s+development\\s+${rotated.createdAt}\\s+\\d{4}-\\S+\\s+none\\s+-\\s+-\\s+-$`, 'm'),
    );
    for (const s of [plain.secretKey, rotated.secretKey, newSecret, hook.secret]) {
      assert.equal(keys.includes(s), false);
    }
    assert.doesNotMatch(keys, /sk_(dev|live)_|whsec_/);
    const keyRows = JSON.parse(await cli('list-keys', p.id, '--json')) as Body[];
    assert.deepEqual(
      keyRows.map((k) => [k.id, k.webhook?.url ?? null]),
      [
        [plain.id, `${receiver.url}/lists-cli`],
        [rotated.id, null],
      ],
    );

    await assert.rejects(cli('list-keys', gone.id), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /404 PROJECT_NOT_FOUND/);
      return true;
    });
    await assert.rejects(cli('list-keys'), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /list-keys needs PROJECT_ID/);
      return true;
    });
  });
});
