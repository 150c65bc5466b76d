import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createEnclavePin, PIN_FILE, readPin, writePin } from './enclave-pin.ts';

const root = mkdtempSync(join(tmpdir(), 'enclave-pin-'));
after(() => rmSync(root, { recursive: true, force: true }));
let count = 0;
const freshDir = (): string => mkdtempSync(join(root, `d${count++}-`));

const A = { publicKey: 'a', fingerprint: 'a'.repeat(64) };
const B = { publicKey: 'b', fingerprint: 'b'.repeat(64) };

describe('enclave identity pin', () => {
  test('the first key is pinned in a 0600 file (one log line); the same key passes, another is refused', () => {
    const dataDir = freshDir();
    const lines: string[] = [];
    const pin = createEnclavePin({ dataDir, log: (line) => lines.push(line) });
    assert.equal(pin.check(A), undefined);
    const file = join(dataDir, PIN_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).fingerprint, A.fingerprint);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /pinned .* trust on first use/);
    assert.equal(pin.check(A), undefined);
    const refusal = pin.check(B);
    assert.ok(refusal?.includes(`presented identity ${B.fingerprint}`) && refusal.includes(`pins ${A.fingerprint}`));
    assert.equal(readPin(dataDir)?.fingerprint, A.fingerprint, 'a refused key never replaces the pin');
    assert.equal(lines.length, 1);
  });

  test('a re-pin on disk is honoured at the next check, without a restart', () => {
    const dataDir = freshDir();
    const pin = createEnclavePin({ dataDir, log: () => undefined });
    assert.equal(pin.check(A), undefined);
    writePin(dataDir, B.fingerprint, { replace: true });
    assert.notEqual(pin.check(A), undefined);
    assert.equal(pin.check(B), undefined);
    assert.equal(statSync(join(dataDir, PIN_FILE)).mode & 0o777, 0o600);
  });

  test('an untrustworthy pin file refuses every key and is never replaced', () => {
    const cases: [string, (file: string) => void, RegExp][] = [
      ['writable by others', (file) => chmodSync(file, 0o666), /writable by other users/],
      ['not JSON', (file) => writeFileSync(file, 'garbage'), /not valid JSON/],
      ['no fingerprint', (file) => writeFileSync(file, '{"fingerprint":"xyz","pinnedAt":"now"}'), /holds no/],
    ];
    for (const [name, spoil, pattern] of cases) {
      const dataDir = freshDir();
      const pin = createEnclavePin({ dataDir, log: () => undefined });
      assert.equal(pin.check(A), undefined);
      const file = join(dataDir, PIN_FILE);
      spoil(file);
      const before = readFileSync(file);
      const refusal = pin.check(A);
      assert.match(refusal ?? '', pattern, name);
      assert.match(refusal ?? '', /no enclave is trusted/, name);
      assert.deepEqual(readFileSync(file), before, `${name}: left as it was`);
    }
    const dataDir = freshDir();
    const elsewhere = join(freshDir(), 'pin.json');
    writeFileSync(elsewhere, JSON.stringify({ fingerprint: A.fingerprint, pinnedAt: 'x' }), { mode: 0o600 });
    symlinkSync(elsewhere, join(dataDir, PIN_FILE));
    assert.match(createEnclavePin({ dataDir, log: () => undefined }).check(A) ?? '', /not a regular file/);
  });

  test('writePin without replace never overwrites a pin that appeared meanwhile', () => {
    const dataDir = freshDir();
    writePin(dataDir, A.fingerprint, { replace: false });
    assert.throws(() => writePin(dataDir, B.fingerprint, { replace: false }), { code: 'EEXIST' });
    assert.equal(readPin(dataDir)?.fingerprint, A.fingerprint);
    assert.throws(() => writePin(dataDir, 'not-hex', { replace: true }), /64 lowercase hex/);
  });
});
