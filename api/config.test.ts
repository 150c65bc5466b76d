import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { resolveAdminToken } from './admin-token.ts';
import { ConfigError, HTTP_LIMIT_DEFAULTS, loadConfig, parseTrustProxy } from './config.ts';

const base = { DATA_DIR: '/tmp/wcs-config-test' };

/** The problems loadConfig reports for `env` (none: an empty list). */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
}

describe('TRUST_PROXY', () => {
  test('a hop count or proxy addresses/CIDRs; unset, empty, 0 and false trust nothing', () => {
    const cases: Array<[string | undefined, unknown]> = [
      [undefined, false],
      ['', false],
      ['0', false],
      ['false', false],
      ['1', 1],
      ['2', 2],
      ['10.0.0.5', ['10.0.0.5']],
      ['10.0.0.5, 10.1.0.0/16,::1', ['10.0.0.5', '10.1.0.0/16', '::1']],
      ['fd00::/8', ['fd00::/8']],
    ];
    for (const [raw, value] of cases) {
      const parsed = parseTrustProxy(raw);
      assert.equal(parsed.problem, undefined, String(raw));
      assert.deepEqual(parsed.value, value, String(raw));
    }
  });

  test('true (every hop) and anything else is refused with a message naming TRUST_PROXY', () => {
    for (const raw of [
      'true',
      'True',
      'yes',
      'on',
      'maybe',
      '17',
      '-1',
      '10.0.0.5,10',
      '127.1',
      '1.2.3.4/33',
      '10.0.0.0/',
      '10.0.0.5,',
    ]) {
      const found = problems({ TRUST_PROXY: raw });
      assert.equal(found.length, 1, `${raw}: ${found.join('; ')}`);
      assert.match(found[0]!, /^TRUST_PROXY/, raw);
    }
    assert.match(problems({ TRUST_PROXY: 'true' })[0]!, /forge/);
  });
});

describe('admin listener and HTTP limits', () => {
  test('defaults: admin on 127.0.0.1:8081, 300 requests a minute, the documented HTTP limits', () => {
    const c = loadConfig(base);
    assert.equal(c.adminHost, '127.0.0.1');
    assert.equal(c.adminPort, 8081);
    assert.equal(c.adminRateLimitPerMinute, 300);
    assert.deepEqual(c.http, HTTP_LIMIT_DEFAULTS);
    assert.equal(c.trustProxy, false);
  });

  test('ADMIN_TOKEN needs 32 characters; ADMIN_PORT must differ from PORT; headers timeout within the request timeout', () => {
    assert.match(problems({ ADMIN_TOKEN: 'x'.repeat(31) }).join(), /ADMIN_TOKEN must be at least 32/);
    assert.deepEqual(problems({ ADMIN_TOKEN: 'x'.repeat(32) }), []);
    assert.match(problems({ PORT: '9000', ADMIN_PORT: '9000' }).join(), /ADMIN_PORT must differ from PORT/);
    assert.deepEqual(problems({ PORT: '0', ADMIN_PORT: '0' }), []);
    assert.match(problems({ ADMIN_PORT: '65536' }).join(), /ADMIN_PORT/);
    assert.match(problems({ ADMIN_HOST: 'not a host' }).join(), /ADMIN_HOST/);
    assert.match(
      problems({ HTTP_HEADERS_TIMEOUT_MS: '40000', HTTP_REQUEST_TIMEOUT_MS: '30000' }).join(),
      /HTTP_HEADERS_TIMEOUT_MS .* must not exceed HTTP_REQUEST_TIMEOUT_MS/,
    );
    for (const name of ['HTTP_MAX_CONNECTIONS', 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 'ADMIN_RATE_LIMIT_PER_MINUTE']) {
      assert.match(problems({ [name]: '0' }).join(), new RegExp(name));
    }
  });

  test('an admin-token file under 32 characters is refused; a generated one is 43', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-token-'));
    try {
      const generated = resolveAdminToken(dir);
      assert.equal(generated.token.length, 43);
      assert.equal(fs.statSync(path.join(dir, 'admin-token')).mode & 0o777, 0o600);
      assert.equal(resolveAdminToken(dir).token, generated.token);
      fs.writeFileSync(path.join(dir, 'admin-token'), `${'t'.repeat(31)}\n`);
      assert.throws(() => resolveAdminToken(dir), /no usable token/);
      assert.throws(() => resolveAdminToken(dir, 'short-token'), /ADMIN_TOKEN must be at least 32/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('approval lifetimes', () => {
  test('APPROVAL_CASE_TTL_MS defaults to seven days, REVIEW_TTL_MS to 24 hours; both shortened, never zero', () => {
    const c = loadConfig(base);
    assert.equal(c.approvalCaseTtlMs, 7 * 24 * 3600_000);
    assert.equal(c.reviewTtlMs, 24 * 3600_000);
    const short = loadConfig({ ...base, APPROVAL_CASE_TTL_MS: '2000', REVIEW_TTL_MS: '500' });
    assert.equal(short.approvalCaseTtlMs, 2000);
    assert.equal(short.reviewTtlMs, 500);
    for (const name of ['APPROVAL_CASE_TTL_MS', 'REVIEW_TTL_MS']) {
      assert.match(problems({ [name]: '0' }).join(), new RegExp(name));
      assert.match(problems({ [name]: '7d' }).join(), new RegExp(name));
    }
  });
});
