/**
 * Property-based fuzzing of the public API: requests generated from the running service's `/openapi.json`
 * (test/helpers/fuzz-requests.ts) against the whole appliance with its real enclave. Whatever is sent, the
 * service must answer below 500, in JSON, errors in the `{code, message, requestId}` envelope with the
 * request id of the `X-Request-Id` header, and still be up and ready at the end.
 *
 *   FUZZ_RUNS     bursts to send, each one to four requests at once (default 300)
 *   FUZZ_SECONDS  time budget; the run stops early, green, when it is spent (default 40)
 *   FUZZ_SEED     replay a run: a failure prints its seed (default: a new one each run)
 *
 * For example `FUZZ_RUNS=5000 FUZZ_SECONDS=600 node --import tsx --test test/fuzz.spec.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { type RawResponse, rawRequest } from './helpers/bad-input-http.ts';
import {
  describeRequest,
  type FuzzRequest,
  type FuzzTargets,
  fuzzBursts,
  listOperations,
  type OpenApiDoc,
  WALLET_TYPES,
  type WalletType,
} from './helpers/fuzz-requests.ts';
import { buildFuzzSeeds } from './helpers/fuzz-seeds.ts';
import { startTestService, type TestService, type WalletBody } from './helpers/service.ts';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 300);
const SECONDS = Number(process.env['FUZZ_SECONDS'] ?? 40);
const SEED =
  process.env['FUZZ_SEED'] !== undefined
    ? Number(process.env['FUZZ_SEED'])
    : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
/** A request still unanswered after this long counts as a hang (a freeze detector, not a speed check). */
const ANSWER_TIMEOUT_MS = 20_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

let svc: TestService;
let targets: FuzzTargets;
let doc: OpenApiDoc;

before(async () => {
  svc = await startTestService();
  const partner = await svc.newPartner();
  const foreign = await svc.newPartner();
  const create = async (secret: string, type: string, userIdentifier: string): Promise<WalletBody> => {
    const r = await svc.v1(secret, 'POST', '/wallets', { type, userIdentifier, userIdentifierType: 'CUSTOM_ID' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body as WalletBody;
  };
  const wallets: Record<string, WalletBody> = {};
  for (const type of WALLET_TYPES) wallets[type] = await create(partner.secret, type, `fuzz-${type}`);
  const pregenerate = async (type: string, userIdentifier: string) => {
    const r = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, {
      type,
      userIdentifier,
      userIdentifierType: 'EMAIL',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.wallet as WalletBody;
  };
  const pregenerated = await pregenerate('EVM', 'pregen@example.com');
  const claimed = await pregenerate('SOLANA', 'claimed@example.com');
  assert.equal((await svc.admin('POST', `/wallets/${claimed.id}/claim`, {})).status, 200);
  const foreignWallet = await create(foreign.secret, 'EVM', 'fuzz-foreign');

  // Signing policies on for the fuzzed key, one active policy per wallet type with every kind of rule: its fuzzed
  // signing requests pass the whole decision point (facts read from hostile bodies, spend windows, reviews), not only
  // its off switch. The fuzzed policy routes may rewrite or remove them meanwhile, as a partner could.
  const on = await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: true });
  assert.equal(on.status, 200, JSON.stringify(on.body));
  const moving: Record<WalletType, string[]> = {
    EVM: ['transfer', 'sign_transaction'],
    SOLANA: ['transfer', 'sign_transaction'],
    STELLAR: ['sign_transaction'],
    SUI: ['sign_transaction'],
    COSMOS: [],
  };
  for (const type of WALLET_TYPES) {
    const actions = moving[type];
    const policy = {
      name: `fuzz-${type}`,
      layer: 'guardrail',
      scope: { walletType: type },
      rules: [
        {
          id: 'raw',
          effect: 'allow',
          actions: ['raw_signature'],
          conditions: [{ fact: 'wallet.type', op: 'eq', value: type }],
        },
        {
          id: 'cap',
          effect: 'deny',
          actions,
          conditions: [{ spend: { asset: 'native', window: '1h' }, op: 'gt', value: '1000000000000000000000000' }],
        },
        {
          id: 'big',
          effect: 'require_approval',
          actions,
          conditions: [{ fact: 'value', op: 'gte', value: '500000000000000000000000' }],
        },
        {
          id: 'nowhere',
          effect: 'deny',
          actions: ['all'],
          conditions: [{ fact: 'wallet.id', op: 'in', value: ['no-such-wallet'] }],
        },
      ].filter((rule) => rule.actions.length > 0),
    };
    const created = await svc.v1(partner.secret, 'POST', '/permissions-v2/policies', { policy });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const active = await svc.v1(partner.secret, 'POST', `/permissions-v2/policies/${created.body.id}/activate`, {
      expectedRevision: created.body.revision,
    });
    assert.equal(active.status, 200, JSON.stringify(active.body));
  }

  const key = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
  assert.equal(key.status, 200);
  const seeds = await buildFuzzSeeds(
    {
      EVM: wallets['EVM']!.address,
      SOLANA: wallets['SOLANA']!.address,
      STELLAR: wallets['STELLAR']!.address,
      SUI: wallets['SUI']!.address,
      pregenerated: { id: pregenerated.id, scheme: pregenerated.scheme },
    },
    key.body,
  );
  targets = {
    secret: partner.secret,
    foreignSecret: foreign.secret,
    wallets: Object.fromEntries(WALLET_TYPES.map((type) => [type, wallets[type]!.id])) as Record<WalletType, string>,
    unsignableWalletIds: [pregenerated.id, claimed.id],
    foreignWalletIds: [foreignWallet.id],
    seeds,
  };
  doc = (await (await fetch(`${svc.url}/openapi.json`)).json()) as OpenApiDoc;
});

after(async () => {
  await svc.stop();
});

/** Every way an answer breaks the service's promises; an empty list means a proper answer. */
function answerProblems(req: FuzzRequest, res: RawResponse): string[] {
  const problems: string[] = [];
  const snippet = res.text.length > 200 ? `${res.text.slice(0, 200)}…` : res.text;
  if (res.status >= 500) problems.push(`answered ${res.status}: ${snippet}`);
  const rid = res.headers['x-request-id'];
  if (typeof rid !== 'string' || rid === '') problems.push('no x-request-id header');
  const sent = req.headers['x-request-id'];
  if (sent !== undefined && REQUEST_ID.test(sent) && rid !== sent)
    problems.push(`x-request-id ${rid}, but ${sent} was sent`);
  if (req.method === 'HEAD' || res.status === 204) {
    if (res.text !== '') problems.push(`a body on a ${req.method} ${res.status} answer`);
    return problems;
  }
  if (!String(res.headers['content-type']).startsWith('application/json')) {
    problems.push(`content-type ${res.headers['content-type']}: ${snippet}`);
  }
  const body = res.body as Record<string, unknown> | undefined;
  if (body === undefined) problems.push(`the body is not JSON: ${JSON.stringify(snippet)}`);
  else if (res.status >= 400) {
    if (typeof body['code'] !== 'string' || body['code'] === '') problems.push(`no code: ${snippet}`);
    if (typeof body['message'] !== 'string' || body['message'] === '') problems.push(`no message: ${snippet}`);
    if (body['requestId'] !== rid) problems.push(`requestId ${String(body['requestId'])} is not the header's ${rid}`);
  }
  return problems;
}

test('fuzzed /v1 requests from /openapi.json: never a 5xx, always the envelope and the request id', async (t) => {
  t.diagnostic(`seed ${SEED}`);
  const ops = listOperations(doc, '/v1');
  assert.ok(ops.length >= 10, `only ${ops.length} /v1 operations in /openapi.json`);
  const statuses = new Map<string, Map<number, number>>();
  const slowest: Array<{ ms: number; req: FuzzRequest; status: number }> = [];

  const send = async (req: FuzzRequest): Promise<string[]> => {
    const t0 = performance.now();
    let res: RawResponse;
    try {
      res = await rawRequest(svc.url, req, ANSWER_TIMEOUT_MS);
    } catch (err) {
      return [`no answer: ${(err as Error).message}`];
    }
    const ms = performance.now() - t0;
    const byStatus = statuses.get(req.operation) ?? new Map<number, number>();
    byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
    statuses.set(req.operation, byStatus);
    slowest.push({ ms, req, status: res.status });
    slowest.sort((a, b) => b.ms - a.ms).splice(5);
    return answerProblems(req, res);
  };
  let sent = 0;
  const property = fc.asyncProperty(fuzzBursts(ops, targets), async (burst) => {
    sent += burst.length;
    const problems = await Promise.all(burst.map(send));
    const failed = problems.flatMap((p, i) =>
      p.length > 0 ? [`request ${i + 1} of ${burst.length}: ${p.join('; ')}`] : [],
    );
    if (failed.length > 0) throw new Error(failed.join('\n'));
  });
  const details = await fc.check(property, {
    seed: SEED,
    numRuns: RUNS,
    interruptAfterTimeLimit: SECONDS * 1000,
    markInterruptAsFailure: false,
  });

  for (const [op, byStatus] of [...statuses].sort()) {
    const counts = [...byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
    t.diagnostic(`${op}: ${counts.join(' ')}`);
  }
  for (const { ms, req, status } of slowest) {
    t.diagnostic(
      `slow: ${ms.toFixed(0)} ms ${status} ${describeRequest(req).split('\n')[0]} (${req.notes.join('; ')})`,
    );
  }
  t.diagnostic(
    `${sent} requests in ${details.numRuns} bursts, seed ${SEED}${details.interrupted ? ' (time budget spent)' : ''}`,
  );

  if (details.failed) {
    assert.fail(
      `${fc.defaultReportMessage(details)}\nWhat went wrong: ${(details.errorInstance as Error | undefined)?.message}\n` +
        `Replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} node --import tsx --test test/fuzz.spec.ts`,
    );
  }
  // No crash: the enclave process is still the one started, and the whole service is ready.
  assert.equal(svc.enclave.exitCode, null, 'the enclave process exited');
  assert.equal(svc.enclave.signalCode, null, 'the enclave process was killed');
  const ready = await fetch(`${svc.url}/readyz`);
  assert.equal(ready.status, 200, await ready.text());
});
