import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { nodeArgs } from './helpers/entry.ts';
import { type Partner, ROOT, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

// TRUST_PROXY decides which X-Forwarded-For entry is the caller's address, and so what the IP allowlist
// sees. The attack: a caller writes the address it wants into X-Forwarded-For. Only what a trusted proxy
// appended may count. Requests here are real HTTP requests from distinct loopback addresses
// (127.0.0.7 the partner, 127.0.0.8 an intruder, 127.0.0.9 the proxy) through a real reverse proxy.

const PARTNER = '127.0.0.7';
const INTRUDER = '127.0.0.8';
const PROXY = '127.0.0.9';

/**
 * A reverse proxy that appends the address it received the request from to X-Forwarded-For (nginx's
 * `$proxy_add_x_forwarded_for`) and connects upstream from `PROXY`.
 */
async function startProxy(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const server = http.createServer((req, res) => {
    const prior = req.headers['x-forwarded-for'];
    const up = http.request(
      {
        host: target.hostname,
        port: Number(target.port),
        method: req.method,
        path: req.url,
        headers: {
          ...req.headers,
          'x-forwarded-for': prior ? `${prior}, ${req.socket.remoteAddress}` : req.socket.remoteAddress,
        },
        localAddress: PROXY,
        agent: false,
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** GET `route` on `base` from the local address `from`, with extra headers. */
function getFrom(base: string, route: string, from: string, headers: Record<string, string>) {
  const url = new URL(base);
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path: route, headers, localAddress: from, agent: false },
      (res) => {
        let text = '';
        res.on('data', (d) => {
          text += String(d);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A service with TRUST_PROXY set, a partner, a proxy in front, and a way to call `/v1/wallets`. */
function suite(trustProxy: string) {
  const ctx = {} as {
    svc: TestService;
    partner: Partner;
    proxy: Awaited<ReturnType<typeof startProxy>>;
  };
  before(async () => {
    ctx.svc = await startTestService({ TRUST_PROXY: trustProxy });
    ctx.partner = await ctx.svc.newPartner();
    ctx.proxy = await startProxy(ctx.svc.url);
  });
  after(async () => {
    await ctx.proxy?.close();
    await ctx.svc?.stop();
  });
  const allow = async (cidrs: string[]) => {
    const r = await ctx.svc.admin('PUT', `/projects/${ctx.partner.projectId}/ip-allowlist`, { cidrs });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  const viaProxy = (from: string, forged?: string) =>
    getFrom(ctx.proxy.url, '/v1/wallets', from, {
      'x-api-key': ctx.partner.secret,
      ...(forged ? { 'x-forwarded-for': forged } : {}),
    });
  const direct = (from: string, forged?: string) =>
    getFrom(ctx.svc.url, '/v1/wallets', from, {
      'x-api-key': ctx.partner.secret,
      ...(forged ? { 'x-forwarded-for': forged } : {}),
    });
  return { ctx, allow, viaProxy, direct };
}

const refusedAsOutside = (r: { status: number; body: Record<string, unknown> }, label: string) => {
  assert.equal(r.status, 401, `${label}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body['code'], 'IP_NOT_ALLOWED', label);
};

describe('TRUST_PROXY=1 (one proxy in front)', () => {
  const { allow, viaProxy } = suite('1');

  test('the address the proxy appended is the caller: the allowlist admits the partner and refuses the intruder', async () => {
    await allow([`${PARTNER}/32`]);
    // The service's peer is the proxy (127.0.0.9), outside the allowlist: a 200 means X-Forwarded-For was read.
    assert.equal((await viaProxy(PARTNER)).status, 200);
    refusedAsOutside(await viaProxy(INTRUDER), 'intruder');
  });

  test('a forged leftmost X-Forwarded-For does not pass the allowlist', async () => {
    await allow(['10.0.0.0/8']);
    for (const forged of ['10.1.2.3', '10.1.2.3, 10.4.5.6', '10.1.2.3,10.1.2.3']) {
      refusedAsOutside(await viaProxy(PARTNER, forged), `forged ${forged}`);
    }
    await allow([`${PARTNER}/32`]);
    refusedAsOutside(await viaProxy(INTRUDER, PARTNER), 'intruder forging the partner address');
  });
});

describe(`TRUST_PROXY=${PROXY}/32 (the proxy's address)`, () => {
  const { allow, viaProxy, direct } = suite(`${PROXY}/32, 192.0.2.0/24`);

  test('through the proxy: the appended address counts, a forged one does not', async () => {
    await allow([`${PARTNER}/32`]);
    assert.equal((await viaProxy(PARTNER)).status, 200);
    refusedAsOutside(await viaProxy(INTRUDER), 'intruder');
    refusedAsOutside(await viaProxy(INTRUDER, PARTNER), 'intruder forging the partner address');
    await allow(['10.0.0.0/8']);
    refusedAsOutside(await viaProxy(PARTNER, '10.1.2.3'), 'forged 10.1.2.3');
  });

  test('a direct caller (not the proxy) cannot claim an address with X-Forwarded-For at all', async () => {
    await allow([`${PARTNER}/32`]);
    refusedAsOutside(await direct(INTRUDER, PARTNER), 'direct intruder forging the partner address');
    assert.equal((await direct(PARTNER, '10.1.2.3')).status, 200, 'its own address counts, whatever it forges');
  });
});

describe('TRUST_PROXY=true is refused at start', () => {
  test('api/main.ts exits 78 (EX_CONFIG) with a message naming TRUST_PROXY, before serving anything', async () => {
    const dataDir = tempDataDir();
    try {
      for (const value of ['true', 'TRUE', 'yes', 'maybe', '10.0.0.0/33']) {
        await assert.rejects(
          promisify(execFile)(process.execPath, nodeArgs('api/main'), {
            cwd: ROOT,
            env: { ...process.env, DATA_DIR: dataDir, TRUST_PROXY: value, PORT: '0', ADMIN_PORT: '0' },
            timeout: 20_000,
          }),
          (err: { code: number; stderr: string }) => {
            assert.equal(err.code, 78, value);
            assert.match(err.stderr, /TRUST_PROXY/, value);
            return true;
          },
        );
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
