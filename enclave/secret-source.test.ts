import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { credentialName, readSecret, SecretSourceError } from './secret-source.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'secret-source-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs readSecret in a child that gets `SOME_SECRET_FD=4` on a pipe, as the supervisor does; writes after `delayMs`. */
async function readInChild(value: string, delayMs: number): Promise<{ out: string; err: string; code: number | null }> {
  const script =
    "const { readSecret } = await import('./enclave/secret-source.ts');" +
    "const s = readSecret('SOME_SECRET', { env: process.env });" +
    'process.stdout.write(JSON.stringify({ s, left: Object.keys(process.env).filter((k) => k.startsWith("SOME_")) }));';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', SOME_SECRET_FD: '4' },
    stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => {
    out += String(d);
  });
  child.stderr!.on('data', (d) => {
    err += String(d);
  });
  const pipe = child.stdio[4] as Writable;
  pipe.on('error', () => undefined);
  setTimeout(() => pipe.end(value), delayMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { out, err, code };
}

describe('readSecret', () => {
  test('credential names: lower case with dashes', () => {
    assert.equal(credentialName('ENCLAVE_MASTER_KEY'), 'enclave-master-key');
    assert.equal(credentialName('ENCLAVE_MASTER_KEY_NEXT'), 'enclave-master-key-next');
    assert.equal(credentialName('ADMIN_TOKEN'), 'admin-token');
  });

  test('a pipe written well after the child started is read to its end, and its variable removed', async () => {
    const value = `${'f0'.repeat(32)}\n`;
    const { out, err, code } = await readInChild(value, 1500);
    assert.equal(code, 0, err);
    const result = JSON.parse(out) as { s: { value: string; kind: string; origin: string }; left: string[] };
    assert.equal(result.s.value, value);
    assert.equal(result.s.kind, 'fd');
    assert.equal(result.s.origin, 'SOME_SECRET (file descriptor 4 from SOME_SECRET_FD)');
    assert.deepEqual(result.left, [], 'SOME_SECRET_FD is removed from process.env');
  });

  test('nothing given: undefined; a file is used only as the last resort, and only if private', () => {
    assert.equal(readSecret('NOPE', { env: {} }), undefined);
    const file = join(dir, 'secret-file');
    writeFileSync(file, 'from-file', { mode: 0o600 });
    assert.deepEqual(readSecret('NOPE', { env: {}, file }), {
      value: 'from-file',
      origin: `the file ${file}`,
      kind: 'file',
    });
    assert.equal(readSecret('NOPE', { env: { NOPE: 'from-env' }, file })?.value, 'from-env');
  });

  test('a credential and a variable at once are refused, naming both', () => {
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials);
    writeFileSync(join(credentials, 'admin-token'), 'credential-token', { mode: 0o400 });
    assert.equal(readSecret('ADMIN_TOKEN', { env: { CREDENTIALS_DIRECTORY: credentials } })?.value, 'credential-token');
    assert.throws(
      () => readSecret('ADMIN_TOKEN', { env: { CREDENTIALS_DIRECTORY: credentials, ADMIN_TOKEN: 'env-token' } }),
      (error: unknown) =>
        error instanceof SecretSourceError &&
        error.message.includes(`ADMIN_TOKEN, ${join(credentials, 'admin-token')}`) &&
        !error.message.includes('env-token'),
    );
  });

  test('a credential that cannot be read stops with a message naming it', () => {
    const credentials = join(dir, 'credentials-broken');
    mkdirSync(join(credentials, 'admin-token'), { recursive: true }); // a directory where a file should be
    assert.throws(
      () => readSecret('ADMIN_TOKEN', { env: { CREDENTIALS_DIRECTORY: credentials } }),
      (error: unknown) =>
        error instanceof SecretSourceError &&
        error.message === `could not read ADMIN_TOKEN (systemd credential ${join(credentials, 'admin-token')}): EISDIR`,
    );
  });
});
