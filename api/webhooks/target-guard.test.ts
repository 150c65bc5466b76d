import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertPublicTarget, guardedLookup, isPublicAddress } from './target-guard.ts';

test('only public unicast addresses pass', () => {
  for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isPublicAddress(ip), true, ip);
  for (const ip of [
    '127.0.0.1',
    '127.8.9.10',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '192.0.2.1',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '2002:a00:1::',
    '2001:db8::1',
    'not an address',
  ]) {
    assert.equal(isPublicAddress(ip), false, ip);
  }
  assert.equal(isPublicAddress('::ffff:93.184.216.34'), true, 'a mapped address is judged as the IPv4 it carries');
});

test('assertPublicTarget checks literals directly and every address a name resolves to', async () => {
  await assertPublicTarget(new URL('https://93.184.216.34/x'), async () => assert.fail('a literal is not resolved'));
  await assert.rejects(assertPublicTarget(new URL('https://[::1]/x')), /not a public address/);
  await assert.rejects(
    assertPublicTarget(new URL('https://two.example/x'), async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.2', family: 4 },
    ]),
    /resolves to 10\.0\.0\.2/,
  );
  await assert.rejects(
    assertPublicTarget(new URL('https://gone.example/x'), async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    }),
    /does not resolve \(ENOTFOUND\)/,
  );
});

test('guardedLookup answers as node expects, and refuses a private answer', async () => {
  const lookup = guardedLookup(async (h) =>
    h === 'ok.example'
      ? [
          { address: '93.184.216.34', family: 4 },
          { address: '2606:4700:4700::1111', family: 6 },
        ]
      : [{ address: '127.0.0.1', family: 4 }],
  );
  const call = (host: string, options: object) =>
    new Promise<{ err: unknown; address: unknown; family: unknown }>((resolve) =>
      lookup(host, options, (err, address, family) => resolve({ err, address, family })),
    );
  assert.deepEqual(await call('ok.example', { family: 4 }), { err: null, address: '93.184.216.34', family: 4 });
  const all = await call('ok.example', { all: true });
  assert.equal((all.address as unknown[]).length, 2);
  const refused = await call('evil.example', { all: true });
  assert.match(String((refused.err as Error).message), /127\.0\.0\.1, which is not a public address/);
});
