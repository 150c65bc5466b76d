/**
 * The operator CLI (`npm run admin -- <verb> …`): the admin API's verbs for people at a terminal. It
 * talks to the running service's admin listener (ADMIN_HOST:ADMIN_PORT, the same variables the service
 * reads) over HTTP with the admin token (ADMIN_TOKEN, else $DATA_DIR/admin-token).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ADMIN_PORT } from '../api/config.ts';
import { ENCLAVE_PIN_USAGE, runEnclavePinVerb } from './enclave-pin-verbs.ts';

const USAGE = `usage: npm run admin -- <verb> [options]

verbs:
  quickstart [--name NAME] [--plan P [--rate-limit N]]
                                                create a project (free plan unless --plan) and a development key;
                                                print both, with the key's requests per minute
  create-project --name NAME [--plan PLAN] [--rate-limit N]
  list-projects                                 every project: plan, requests/min, allowlist, keys, deleted or live
  delete-project PROJECT_ID                     its keys stop working; its wallets stay
  create-key PROJECT_ID [--environment development|production]
  list-keys PROJECT_ID                          the project's API keys: environment, created, rotated, webhook
                                                (enabled, healthy or failing, URL, events); never a secret
  rotate-key KEY_ID                             the old secret is refused at once
  set-ip-allowlist PROJECT_ID [CIDR ...]        no CIDR lifts the restriction
  claim-wallet WALLET_ID [--user-id ID]         mark a wallet claimed: REST signing refuses it from then on
  pregenerate-wallet PROJECT_ID --type TYPE --user-identifier ID [--user-identifier-type CUSTOM_ID|EMAIL|PHONE]
                                                the user share is printed once and kept nowhere
  list-actors [--machine M] [--state S] [--faulted]
                                                unfinished actors (wallets being created, …); --faulted: held for you
  show-actor ACTOR_ID                           its state, context, pending effects and stored events
  retry-actor ACTOR_ID                          run a faulted actor again (its stored events apply first)
  abandon-actor ACTOR_ID                        a faulted actor never runs again (a wallet being created is removed)
  release-hold WALLET_ID CHAIN_KEY --reason WHY --by NAME
                                                release the wallet's hold on a chain (evm:<chainId>,
                                                solana:<network>) from a payment that can never resolve: it
                                                stops sending, keeps its status and stays watched
  yield-chains                                  whether yield is enabled on each yield chain (1, 8453, 11155111)
  set-yield CHAIN_ID --enabled on|off [--reason WHY]
                                                incident control: off refuses new yield operations on the chain
                                                (409 YIELD_DISABLED); positions, operations and cancellation of
                                                unsigned work keep working
  show-permissions KEY_ID                       the key's signing-policy switch, approvals and production review
  set-permissions KEY_ID --enabled on|off [--approvals on|off]
                                                turn signing policies on or off for a key (approvals default off);
                                                on a production key, on opens a production review (awaiting_review)
  publish-review KEY_ID --reason WHY --by NAME  publish a production key's requested review: the project's
                                                development keys' active policies become its active policies
  dismiss-review KEY_ID --reason WHY --by NAME  dismiss a production key's requested review: nothing is published
${ENCLAVE_PIN_USAGE}
  master-key-status                             the enclave's master key: rotation state, key ids, records per key
  rotate-master-key [--confirm KEY_ID]          rotate the enclave's master key: without --confirm, prepare the
                                                next key and print its id; with it, re-wrap every record under
                                                that key and wait until done (docs/operations.md "Rotating the master key")
  set-webhook KEY_ID URL [--events E1,E2] [--disabled] [--format timestamp-body|standard-webhooks]
                                                create or change the key's HTTPS endpoint; the whsec_ secret is
                                                printed once, when this creates it; --events is needed then and
                                                kept when left out later; --disabled stops deliveries and keeps
                                                the configuration; without it the endpoint is enabled; a type
                                                this service never sends (user.created, …) is kept and printed
                                                as a warning
  show-webhook KEY_ID                           the endpoint, its state and delivery counts (never its secret)
  delete-webhook KEY_ID                         remove the endpoint, its secrets and its deliveries
  rotate-webhook-secret KEY_ID                  a new secret, printed once; the old one also signs for 24 hours
  test-webhook KEY_ID                           queue a test.ping to the endpoint
  list-deliveries KEY_ID [--status pending|delivered|dead] [--limit N] [--cursor C]
                                                the endpoint's deliveries, newest first, one page
  redeliver KEY_ID EVENT_ID                     deliver one event again, with the same webhook-id and body
  redeliver-dead KEY_ID                         deliver every dead delivery of the endpoint again

  signing-policy approvals (people who approve held requests; docs/operations.md "Approvals"):
  create-user PROJECT_ID --name NAME            a person who can hold roles and decide approval cases
  list-users PROJECT_ID
  create-scope PROJECT_ID --name NAME           an authorization scope (people and their roles)
  list-scopes PROJECT_ID
  show-scope SCOPE_ID                           its users, roles and revisions
  assign-roles SCOPE_ID USER_ID --roles R1,R2 --revision N [--force]
                                                replace the user's roles (no --roles: none); N is the current
                                                revision (0 the first time); --force writes even when pending
                                                cases could then never complete, and invalidates them
  bind-wallet WALLET_ID SCOPE_ID|none           the scope that decides the wallet's approval cases
  list-cases PROJECT_ID [--status S] [--wallet-id W]
                                                the project's approval cases, newest first
  show-case CASE_ID                             its stages and decisions
  decide-case CASE_ID --user-id USER_ID --decision approve|reject
                                                record that person's decision (API keys cannot decide)

options:
  --url URL      admin listener base URL (default http://$ADMIN_HOST:$ADMIN_PORT, i.e. http://127.0.0.1:${DEFAULT_ADMIN_PORT})
  --json         print the raw JSON answer`;

function fail(msg: string): never {
  console.error(msg);
  process.exit(1);
}

/**
 * A base URL a client on this machine can reach for a listener bound to `host`: a wildcard bind
 * (0.0.0.0, ::) is reached on loopback; an IPv6 address goes in brackets.
 */
function localUrl(host: string | undefined, port: string): string {
  let h = host || '127.0.0.1';
  if (h === '0.0.0.0') h = '127.0.0.1';
  if (h === '::' || h === '[::]') h = '::1';
  return `http://${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${port}`;
}

function adminToken(): string {
  if (process.env['ADMIN_TOKEN']) return process.env['ADMIN_TOKEN'];
  const file = path.join(path.resolve(process.env['DATA_DIR'] || './data'), 'admin-token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return fail(`no admin token: set ADMIN_TOKEN or start the service once so that ${file} exists`);
  }
}

/** A webhook endpoint answer for a terminal (the secret is printed by the verbs that may show it). */
function describeWebhook(w: Record<string, unknown>): string {
  const counts = (w['deliveries'] as Record<string, number> | undefined) ?? {};
  return [
    `api key      ${w['apiKeyId']}`,
    `url          ${w['url']}`,
    `events       ${(w['events'] as string[]).join(', ') || 'none'}`,
    ...((w['warnings'] as Array<{ message: string }> | undefined) ?? []).map((x) => `warning      ${x.message}`),
    `enabled      ${w['enabled'] ? 'yes' : 'no: deliveries are stopped'}`,
    `format       ${w['signatureFormat']}`,
    `state        ${w['state']}` +
      (w['state'] === 'failing'
        ? ` (${w['consecutiveFailures']} failures in a row, next probe ${w['nextProbeAt'] ?? 'not scheduled'})`
        : ''),
    `deliveries   ${counts['pending'] ?? 0} pending, ${counts['delivered'] ?? 0} delivered, ${counts['dead'] ?? 0} dead`,
    ...(w['previousSecretExpiresAt'] ? [`old secret   also signs until ${w['previousSecretExpiresAt']}`] : []),
  ].join('\n');
}

/** A key's permissions answer for a terminal. */
function describePermissions(p: Record<string, unknown>): string {
  const review = p['productionReview'] as Record<string, unknown> | null;
  return [
    `api key      ${p['apiKeyId']} (${p['environment']})`,
    `policies     ${p['enabled'] ? 'on: evaluated before every signature' : 'off: every signature allowed'}`,
    `approvals    ${p['approvals'] ? 'on' : 'off'}`,
    ...(review
      ? [
          `review       ${review['status']}` +
            (review['decidedBy'] ? ` (by ${review['decidedBy']} at ${review['decidedAt']}: ${review['reason']})` : ''),
        ]
      : []),
  ].join('\n');
}

/** Rows as columns padded to their widest cell, under a header line. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A master-key status answer for a terminal. */
function describeMasterKey(st: Record<string, unknown>): string {
  const rows = Object.entries((st['rowsByKeyId'] as Record<string, number>) ?? {})
    .map(([id, n]) => `${id}: ${n}`)
    .join(', ');
  return [
    `state        ${st['state']}`,
    `master key   ${st['masterKeyId']}`,
    ...(st['nextKeyId'] ? [`next key     ${st['nextKeyId']}`] : []),
    `sealing key  ${st['sealingKeyId']} (new records are wrapped by it)`,
    `records      ${rows || 'none'}`,
    ...(st['error'] ? [`error        ${st['error']}`] : []),
    `next step    ${st['action']}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      name: { type: 'string' },
      plan: { type: 'string' },
      'rate-limit': { type: 'string' },
      environment: { type: 'string', default: 'development' },
      'user-id': { type: 'string' },
      type: { type: 'string' },
      'user-identifier': { type: 'string' },
      'user-identifier-type': { type: 'string', default: 'CUSTOM_ID' },
      confirm: { type: 'string' },
      json: { type: 'boolean', default: false },
      machine: { type: 'string' },
      state: { type: 'string' },
      faulted: { type: 'boolean', default: false },
      events: { type: 'string' },
      disabled: { type: 'boolean', default: false },
      format: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      roles: { type: 'string' },
      revision: { type: 'string' },
      force: { type: 'boolean', default: false },
      'wallet-id': { type: 'string' },
      decision: { type: 'string' },
      enabled: { type: 'string' },
      approvals: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [verb, ...args] = positionals;
  // Local verbs: the enclave identity pin is read and changed at the terminal only, never over HTTP.
  const printLocal = (obj: unknown, human: string) => console.log(values.json ? JSON.stringify(obj, null, 2) : human);
  if (verb && !values.help && (await runEnclavePinVerb(verb, args, { print: printLocal, fail }))) return;
  if (!verb || values.help) {
    console.log(USAGE);
    process.exit(verb || values.help ? 0 : 1);
  }
  const base =
    values.url ?? localUrl(process.env['ADMIN_HOST'], process.env['ADMIN_PORT'] || String(DEFAULT_ADMIN_PORT));
  /** Where partners call, for the hint quickstart prints. */
  const publicBase = localUrl(process.env['HOST'], process.env['PORT'] || '8080');
  const token = adminToken();

  /** Every row of an admin list, following its cursor page after page (100 a page). */
  async function all(route: string, q = new URLSearchParams()): Promise<Array<Record<string, unknown>>> {
    q.set('limit', '100');
    const rows: Array<Record<string, unknown>> = [];
    for (;;) {
      const page = await call('GET', `${route}?${q}`);
      rows.push(...(page['data'] as Array<Record<string, unknown>>));
      const { cursor } = page['pagination'] as { cursor: string | null };
      if (!cursor) return rows;
      q.set('cursor', cursor);
    }
  }

  async function call(method: string, route: string, body?: unknown): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(`${base}/admin/v1${route}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      return fail(
        `cannot reach the admin API at ${base}: ${(err as Error).message} (is the service running? npm start; ` +
          'the CLI reads ADMIN_HOST and ADMIN_PORT like the service, or takes --url)',
      );
    }
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (!res.ok)
      fail(`${method} ${route} answered ${res.status} ${parsed['code'] ?? ''}: ${parsed['message'] ?? text}`);
    return parsed;
  }
  const print = (obj: unknown, human: string) => console.log(values.json ? JSON.stringify(obj, null, 2) : human);
  const need = (v: string | undefined, what: string): string => v ?? fail(`${verb} needs ${what}\n\n${USAGE}`);

  switch (verb) {
    case 'quickstart': {
      const plan = values.plan ?? 'free';
      const project = await call('POST', '/projects', {
        name: values.name ?? 'my-project',
        plan,
        ...(values['rate-limit'] ? { rateLimitPerMinute: Number(values['rate-limit']) } : {}),
      });
      const key = await call('POST', `/projects/${project['id']}/api-keys`, { environment: 'development' });
      print(
        { project, apiKey: key },
        [
          `project  ${project['id']} (${project['name']}, plan ${project['plan']}, ${project['rateLimitPerMinute']} requests/min)`,
          `api key  ${key['id']} (development)`,
          `secret   ${key['secretKey']}`,
          '',
          `Each key of this project may make ${project['rateLimitPerMinute']} requests a minute (plan ${project['plan']}); past it`,
          'the service answers 429 RATE_LIMITED with Retry-After. For more, start with a larger plan:',
          '  npm run admin -- quickstart --plan growth                         (1,000 a minute)',
          '  npm run admin -- quickstart --plan enterprise --rate-limit 100000 (your own figure)',
          '',
          'The secret is shown once. Try:',
          `  curl -s -X POST ${publicBase}/v1/wallets -H 'X-API-Key: ${key['secretKey']}' \\`,
          `    -H 'Content-Type: application/json' -d '{"type":"EVM","userIdentifier":"user-1","userIdentifierType":"CUSTOM_ID"}'`,
        ].join('\n'),
      );
      break;
    }
    case 'create-project': {
      const body: Record<string, unknown> = { name: need(values.name, '--name') };
      if (values.plan) body['plan'] = values.plan;
      if (values['rate-limit']) body['rateLimitPerMinute'] = Number(values['rate-limit']);
      const p = await call('POST', '/projects', body);
      print(p, `project ${p['id']} (${p['name']}, plan ${p['plan']}, ${p['rateLimitPerMinute']} requests/min)`);
      break;
    }
    case 'list-projects': {
      const rows = await all('/projects');
      print(
        rows,
        rows.length === 0
          ? 'no projects'
          : table(
              ['PROJECT', 'NAME', 'PLAN', 'REQ/MIN', 'KEYS', 'ALLOWLIST', 'CREATED', 'STATE'],
              rows.map((p) => [
                String(p['id']),
                String(p['name']),
                String(p['plan']),
                String(p['rateLimitPerMinute']),
                String(p['apiKeyCount']),
                (p['ipAllowlist'] as string[]).join(',') || 'any',
                String(p['createdAt']),
                p['deletedAt'] ? `deleted ${p['deletedAt']}` : 'live',
              ]),
            ),
      );
      break;
    }
    case 'list-keys': {
      const projectId = need(args[0], 'PROJECT_ID');
      const rows = await all(`/projects/${encodeURIComponent(projectId)}/api-keys`);
      const hook = (w: Record<string, unknown> | null) =>
        w === null
          ? ['none', '-', '-', '-']
          : [
              w['enabled'] ? 'enabled' : 'disabled',
              String(w['state']),
              String(w['url']),
              (w['events'] as string[]).join(','),
            ];
      print(
        rows,
        rows.length === 0
          ? `project ${projectId} has no API keys`
          : table(
              ['KEY', 'ENVIRONMENT', 'CREATED', 'ROTATED', 'WEBHOOK', 'STATE', 'URL', 'EVENTS'],
              rows.map((k) => [
                String(k['id']),
                String(k['environment']),
                String(k['createdAt']),
                k['rotatedAt'] ? String(k['rotatedAt']) : 'never',
                ...hook(k['webhook'] as Record<string, unknown> | null),
              ]),
            ),
      );
      break;
    }
    case 'delete-project': {
      const id = need(args[0], 'PROJECT_ID');
      await call('DELETE', `/projects/${encodeURIComponent(id)}`);
      print({ deleted: id }, `project ${id} deleted: its keys no longer work, its wallets stay`);
      break;
    }
    case 'create-key': {
      const k = await call('POST', `/projects/${encodeURIComponent(need(args[0], 'PROJECT_ID'))}/api-keys`, {
        environment: values.environment,
      });
      print(k, `api key ${k['id']} (${k['environment']})\nsecret  ${k['secretKey']}\n(the secret is shown once)`);
      break;
    }
    case 'rotate-key': {
      const k = await call('POST', `/api-keys/${encodeURIComponent(need(args[0], 'KEY_ID'))}/rotate`);
      print(k, `api key ${k['id']} rotated\nsecret  ${k['secretKey']}\n(the old secret is refused from now on)`);
      break;
    }
    case 'set-ip-allowlist': {
      const r = await call('PUT', `/projects/${encodeURIComponent(need(args[0], 'PROJECT_ID'))}/ip-allowlist`, {
        cidrs: args.slice(1),
      });
      const cidrs = r['cidrs'] as string[];
      print(r, cidrs.length ? `allowlist: ${cidrs.join(', ')}` : 'allowlist cleared: any address may call');
      break;
    }
    case 'claim-wallet': {
      const w = await call(
        'POST',
        `/wallets/${encodeURIComponent(need(args[0], 'WALLET_ID'))}/claim`,
        values['user-id'] ? { userId: values['user-id'] } : {},
      );
      print(w, `wallet ${w['id']} claimed by ${w['userId']} at ${w['claimedAt']}: REST signing now refuses it`);
      break;
    }
    case 'pregenerate-wallet': {
      const r = await call(
        'POST',
        `/projects/${encodeURIComponent(need(args[0], 'PROJECT_ID'))}/pregenerated-wallets`,
        {
          type: need(values.type, '--type'),
          userIdentifier: need(values['user-identifier'], '--user-identifier'),
          userIdentifierType: values['user-identifier-type'],
        },
      );
      const w = r['wallet'] as Record<string, unknown>;
      print(
        r,
        `wallet     ${w['id']} (${w['type']}, ${w['address']})\nuser share ${r['userShare']}\n(shown once: hand it to the user; REST signing needs migrate-share first)`,
      );
      break;
    }
    case 'list-actors': {
      const q = new URLSearchParams();
      if (values.machine) q.set('machine', values.machine);
      if (values.state) q.set('state', values.state);
      if (values.faulted) q.set('faulted', 'true');
      const rows = await all('/actors', q);
      print(
        rows,
        rows.length === 0
          ? 'no actors'
          : rows
              .map(
                (a) =>
                  `${a['actorId']}  ${a['machine']} v${a['machineVersion']}  ${a['state']}  ${a['status']}` +
                  (a['faultReason'] ? `  (${a['faultReason']})` : '') +
                  (a['wakeAt'] ? `  wakes ${a['wakeAt']}` : ''),
              )
              .join('\n'),
      );
      break;
    }
    case 'show-actor':
    case 'retry-actor':
    case 'abandon-actor': {
      const id = encodeURIComponent(need(args[0], 'ACTOR_ID'));
      const a =
        verb === 'show-actor'
          ? await call('GET', `/actors/${id}`)
          : await call('POST', `/actors/${id}/${verb === 'retry-actor' ? 'retry' : 'abandon'}`);
      print(a, JSON.stringify(a, null, 2));
      break;
    }
    case 'release-hold': {
      const walletId = need(args[0], 'WALLET_ID');
      const r = await call('POST', `/wallets/${encodeURIComponent(walletId)}/release-hold`, {
        chainKey: need(args[1], 'CHAIN_KEY'),
        reason: need(values.reason, '--reason'),
        releasedBy: need(values.by, '--by'),
      });
      print(
        r,
        `released: wallet ${r['walletId']} on ${r['chainKey']} is free to pay again\n` +
          `payment ${r['transactionId']} keeps status ${r['status']} and stays watched (released ${r['releasedAt']} by ${r['releasedBy']})`,
      );
      break;
    }
    case 'yield-chains': {
      const r = await call('GET', '/yield/chains');
      const rows = r as unknown as Array<{ chainId: number; enabled: boolean; reason: string | null }>;
      print(
        r,
        rows
          .map((c) => `${c.chainId}\t${c.enabled ? 'enabled' : 'DISABLED'}${c.reason ? `\t${c.reason}` : ''}`)
          .join('\n'),
      );
      break;
    }
    case 'set-yield': {
      const chainId = need(args[0], 'CHAIN_ID');
      const enabled = values.enabled === 'on' || values.enabled === 'true';
      if (!enabled && values.enabled !== 'off' && values.enabled !== 'false') {
        return fail(`--enabled takes on or off\n\n${USAGE}`);
      }
      const r = await call('PUT', `/yield/chains/${encodeURIComponent(chainId)}`, {
        enabled,
        ...(values.reason ? { reason: values.reason } : {}),
      });
      print(
        r,
        `yield on chain ${r['chainId']}: ${r['enabled'] ? 'enabled' : 'disabled (new operations answer 409 YIELD_DISABLED)'}`,
      );
      break;
    }
    case 'show-permissions':
    case 'set-permissions': {
      const keyId = encodeURIComponent(need(args[0], 'KEY_ID'));
      const onOff = (v: string | undefined, what: string, fallback?: boolean): boolean => {
        if (v === undefined && fallback !== undefined) return fallback;
        if (v === 'on' || v === 'true') return true;
        if (v === 'off' || v === 'false') return false;
        return fail(`${what} takes on or off\n\n${USAGE}`);
      };
      const r =
        verb === 'show-permissions'
          ? await call('GET', `/api-keys/${keyId}/permissions`)
          : await call('PUT', `/api-keys/${keyId}/permissions`, {
              enabled: onOff(values.enabled, '--enabled'),
              approvals: onOff(values.approvals, '--approvals', false),
            });
      print(r, describePermissions(r));
      break;
    }
    case 'publish-review':
    case 'dismiss-review': {
      const keyId = encodeURIComponent(need(args[0], 'KEY_ID'));
      const action = verb === 'publish-review' ? 'publish' : 'dismiss';
      const r = await call('POST', `/api-keys/${keyId}/production-review/${action}`, {
        reason: need(values.reason, '--reason'),
        by: need(values.by, '--by'),
      });
      const published = (r['published'] as Array<Record<string, unknown>> | undefined) ?? [];
      const deactivated = (r['deactivated'] as string[] | undefined) ?? [];
      print(
        r,
        [
          describePermissions(r),
          ...published.map((p) => `published    ${p['id']} version ${p['version']} (from ${p['sourcePolicyId']})`),
          ...deactivated.map((id) => `deactivated  ${id} (its development policy is no longer active)`),
        ].join('\n'),
      );
      break;
    }
    case 'master-key-status': {
      const st = await call('GET', '/enclave/master-key');
      print(st, describeMasterKey(st));
      break;
    }
    case 'rotate-master-key': {
      const confirm = values.confirm;
      let st = await call('POST', '/enclave/master-key/rotate', confirm === undefined ? {} : { confirmKeyId: confirm });
      if (confirm !== undefined && !values.json) {
        // The enclave works in the background; follow it until it is done (Ctrl-C stops following, not the work).
        while (st['state'] === 'rotating' && !st['error']) {
          const rows = st['rowsByKeyId'] as Record<string, number>;
          const total = Object.values(rows).reduce((a, b) => a + b, 0);
          console.log(`re-wrapped ${rows[String(st['sealingKeyId'])] ?? 0} of ${total} records`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
          st = await call('GET', '/enclave/master-key');
        }
      }
      print(st, describeMasterKey(st));
      if (st['error']) process.exit(1);
      break;
    }
    case 'set-webhook': {
      const keyId = need(args[0], 'KEY_ID');
      const url = need(args[1], 'URL');
      // Always sent, so that set-webhook without --disabled turns a disabled endpoint back on.
      const enabled = !values.disabled;
      const events = values.events
        ?.split(',')
        .map((e) => e.trim())
        .filter(Boolean);
      const w = await call('PUT', `/api-keys/${encodeURIComponent(keyId)}/webhook`, {
        url,
        ...(events ? { events } : {}),
        enabled,
        ...(values.format ? { signatureFormat: values.format } : {}),
      });
      print(
        w,
        describeWebhook(w) +
          (w['secret']
            ? `\nsecret       ${w['secret']}\n(the secret is shown once: give it to the partner to verify signatures)`
            : '\n(the secret is unchanged; rotate-webhook-secret makes a new one)'),
      );
      break;
    }
    case 'show-webhook': {
      const w = await call('GET', `/api-keys/${encodeURIComponent(need(args[0], 'KEY_ID'))}/webhook`);
      print(w, describeWebhook(w));
      break;
    }
    case 'delete-webhook': {
      const keyId = need(args[0], 'KEY_ID');
      await call('DELETE', `/api-keys/${encodeURIComponent(keyId)}/webhook`);
      print({ deleted: keyId }, `webhook of api key ${keyId} deleted, with its secrets and deliveries`);
      break;
    }
    case 'rotate-webhook-secret': {
      const r = await call('POST', `/api-keys/${encodeURIComponent(need(args[0], 'KEY_ID'))}/webhook/rotate-secret`);
      print(
        r,
        `secret       ${r['secret']}\n(shown once; deliveries also carry a signature with the old secret until ${r['previousSecretExpiresAt']})`,
      );
      break;
    }
    case 'test-webhook': {
      const keyId = need(args[0], 'KEY_ID');
      const r = await call('POST', `/api-keys/${encodeURIComponent(keyId)}/webhook/test`);
      print(r, `test.ping queued as event ${r['eventId']}; follow it with list-deliveries ${keyId}`);
      break;
    }
    case 'list-deliveries': {
      const keyId = need(args[0], 'KEY_ID');
      const q = new URLSearchParams();
      if (values.status) q.set('status', values.status);
      if (values.limit) q.set('limit', values.limit);
      if (values.cursor) q.set('cursor', values.cursor);
      const page = await call(
        'GET',
        `/api-keys/${encodeURIComponent(keyId)}/webhook/deliveries${q.size ? `?${q}` : ''}`,
      );
      const rows = page['data'] as Array<Record<string, unknown>>;
      const { cursor, hasMore } = page['pagination'] as { cursor: string | null; hasMore: boolean };
      const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
      print(
        page,
        (rows.length === 0
          ? 'no deliveries'
          : table(
              ['EVENT', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST', 'LATENCY', 'LAST ATTEMPT', 'NEXT ATTEMPT', 'ERROR'],
              rows.map((d) => [
                cell(d['eventId']),
                // Null once the event is past retention.
                cell(d['type'] ?? '(expired)'),
                cell(d['status']),
                cell(d['attempts']),
                cell(d['lastStatusCode']),
                d['lastLatencyMs'] === null ? '-' : `${d['lastLatencyMs']} ms`,
                cell(d['lastAttemptAt']),
                cell(d['nextAttemptAt']),
                cell(d['lastError']),
              ]),
            )) + (hasMore && cursor ? `\nmore: list-deliveries ${keyId} --cursor ${cursor}` : ''),
      );
      break;
    }
    case 'redeliver':
    case 'redeliver-dead': {
      const keyId = encodeURIComponent(need(args[0], 'KEY_ID'));
      const r =
        verb === 'redeliver'
          ? await call(
              'POST',
              `/api-keys/${keyId}/webhook/deliveries/${encodeURIComponent(need(args[1], 'EVENT_ID'))}/redeliver`,
            )
          : await call('POST', `/api-keys/${keyId}/webhook/redeliver-dead`);
      print(
        r,
        `${r['redelivered']} deliver${r['redelivered'] === 1 ? 'y' : 'ies'} queued again from the first attempt`,
      );
      break;
    }
    case 'create-user':
    case 'create-scope': {
      const projectId = encodeURIComponent(need(args[0], 'PROJECT_ID'));
      const route = verb === 'create-user' ? 'users' : 'authorization-scopes';
      const r = await call('POST', `/projects/${projectId}/${route}`, { name: need(values.name, '--name') });
      print(r, `${verb === 'create-user' ? 'user' : 'scope'} ${r['id']} (${r['name']})`);
      break;
    }
    case 'list-users':
    case 'list-scopes': {
      const projectId = need(args[0], 'PROJECT_ID');
      const route = verb === 'list-users' ? 'users' : 'authorization-scopes';
      const rows = await all(`/projects/${encodeURIComponent(projectId)}/${route}`);
      print(
        rows,
        rows.length === 0
          ? `project ${projectId} has no ${verb === 'list-users' ? 'users' : 'authorization scopes'}`
          : table(
              ['ID', 'NAME', 'CREATED'],
              rows.map((x) => [String(x['id']), String(x['name']), String(x['createdAt'])]),
            ),
      );
      break;
    }
    case 'show-scope': {
      const sc = await call('GET', `/authorization-scopes/${encodeURIComponent(need(args[0], 'SCOPE_ID'))}`);
      const rows = sc['assignments'] as Array<Record<string, unknown>>;
      print(
        sc,
        `scope ${sc['id']} (${sc['name']}), project ${sc['projectId']}\n` +
          (rows.length === 0
            ? 'no assignments'
            : table(
                ['USER', 'ROLES', 'REVISION'],
                rows.map((a) => [
                  String(a['userId']),
                  (a['roles'] as string[]).join(',') || '-',
                  String(a['revision']),
                ]),
              )),
      );
      break;
    }
    case 'assign-roles': {
      const scopeId = encodeURIComponent(need(args[0], 'SCOPE_ID'));
      const userId = encodeURIComponent(need(args[1], 'USER_ID'));
      const roles = (values.roles ?? '')
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
      const r = await call('PUT', `/authorization-scopes/${scopeId}/assignments/${userId}`, {
        roles,
        expectedRevision: Number(need(values.revision, '--revision (the current revision; 0 the first time)')),
        ...(values.force ? { force: true } : {}),
      });
      const invalidated = r['invalidatedCaseIds'] as string[];
      print(
        r,
        `user ${r['userId']} in scope ${r['scopeId']}: ${(r['roles'] as string[]).join(', ') || 'no roles'} (revision ${r['revision']})` +
          (invalidated.length ? `\ninvalidated cases: ${invalidated.join(', ')}` : ''),
      );
      break;
    }
    case 'bind-wallet': {
      const walletId = need(args[0], 'WALLET_ID');
      const scope = need(args[1], 'SCOPE_ID (or none)');
      const r = await call('PUT', `/wallets/${encodeURIComponent(walletId)}/authorization-scope`, {
        scopeId: scope === 'none' ? null : scope,
      });
      print(
        r,
        r['scopeId']
          ? `wallet ${walletId}: approval cases go to scope ${r['scopeId']}`
          : `wallet ${walletId}: bound to no scope (approval rules answer 403 FORBIDDEN)`,
      );
      break;
    }
    case 'list-cases': {
      const projectId = need(args[0], 'PROJECT_ID');
      const q = new URLSearchParams();
      if (values.status) q.set('status', values.status);
      if (values['wallet-id']) q.set('walletId', values['wallet-id']);
      const rows = await all(`/projects/${encodeURIComponent(projectId)}/approval-cases`, q);
      print(
        rows,
        rows.length === 0
          ? 'no approval cases'
          : table(
              ['CASE', 'STATUS', 'WALLET', 'POLICY', 'RULE', 'STAGES', 'EXPIRES'],
              rows.map((c) => [
                String(c['id']),
                String(c['status']),
                String(c['walletId']),
                String(c['policyId']),
                String(c['ruleId']),
                (c['stages'] as Array<Record<string, unknown>>)
                  .map((st) => `${st['role']} ${st['approvals']}/${st['threshold']}`)
                  .join(' > '),
                String(c['expiresAt']),
              ]),
            ),
      );
      break;
    }
    case 'show-case':
    case 'decide-case': {
      const id = encodeURIComponent(need(args[0], 'CASE_ID'));
      const c =
        verb === 'show-case'
          ? await call('GET', `/approval-cases/${id}`)
          : await call('POST', `/approval-cases/${id}/decisions`, {
              userId: need(values['user-id'], '--user-id'),
              decision: need(values.decision, '--decision approve|reject'),
            });
      print(c, JSON.stringify(c, null, 2));
      break;
    }
    default:
      fail(`unknown verb ${verb}\n\n${USAGE}`);
  }
}

void main();
