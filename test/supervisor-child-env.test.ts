/**
 * The supervisor's allowlists (bin/supervisor/child-env.ts): no secret and nothing unlisted reaches a child,
 * and every variable the API or the enclave reads is on its list (else `npm start` would silently drop it).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { API_VARS, allowedFor, childEnv, SECRETS } from '../bin/supervisor/child-env.ts';
import { ROOT } from './helpers/service.ts';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...sources(rel));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(rel);
  }
  return out;
}

/**
 * Names read as `env['X']`, `env.X` (any object called env), and `f('X', …)` in configuration readers (an error's
 * `super('CODE', …)` is not a read).
 */
function variablesRead(files: string[], callsToo: (file: string) => boolean): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const patterns = [/\benv\s*\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g, /\benv\.([A-Z][A-Z0-9_]*)\b/g];
    if (callsToo(file)) patterns.push(/\b(?!super\b)[a-zA-Z]\w*\(\s*['"]([A-Z][A-Z0-9_]*)['"]/g);
    for (const re of patterns) for (const m of text.matchAll(re)) found.set(m[1]!, file);
  }
  return found;
}

const everySecret = [...SECRETS.enclave, ...SECRETS.api];

describe('supervisor: what each child gets of the environment', () => {
  test('no secret, no descriptor variable of one, no supervisor setting reaches either child', () => {
    for (const child of ['enclave', 'api'] as const) {
      for (const name of [
        ...everySecret,
        ...everySecret.map((s) => `${s}_FD`),
        'CREDENTIALS_DIRECTORY',
        'ENCLAVE_USER',
        'API_USER',
      ]) {
        assert.equal(allowedFor(child, name), false, `${name} to the ${child}`);
      }
    }
  });

  test('an allowlist: unknown variables stay with the supervisor; each child gets its own settings', () => {
    const parent = {
      PATH: '/usr/bin',
      LC_ALL: 'C',
      DATA_DIR: '/d',
      ENCLAVE_SOCKET: '/s/enclave.sock',
      ENCLAVE_SOMETHING_LATER: '1',
      PORT: '8080',
      CHAINS_FILE: '/c.json',
      ENCLAVE_MASTER_KEY: 'ab'.repeat(32),
      ADMIN_TOKEN: 'a'.repeat(40),
      AWS_SECRET_ACCESS_KEY: 'elsewhere',
      SOMETHING_ELSE: 'x',
      UNDEFINED_ONE: undefined,
    };
    assert.deepEqual(childEnv('api', parent, { HOME: '/home/api' }), {
      PATH: '/usr/bin',
      LC_ALL: 'C',
      DATA_DIR: '/d',
      ENCLAVE_SOCKET: '/s/enclave.sock',
      PORT: '8080',
      CHAINS_FILE: '/c.json',
      HOME: '/home/api',
    });
    assert.deepEqual(childEnv('enclave', parent), {
      PATH: '/usr/bin',
      LC_ALL: 'C',
      DATA_DIR: '/d',
      ENCLAVE_SOCKET: '/s/enclave.sock',
      ENCLAVE_SOMETHING_LATER: '1',
    });
  });

  test("every variable the API's configuration reads is on the API's list", () => {
    const read = variablesRead(
      sources('api').concat(sources('actors'), sources('store'), sources('chains')),
      (file) => file === join('api', 'config.ts'),
    );
    assert.ok(read.has('PORT') && read.has('TRUST_PROXY'), 'the scan finds what config.ts reads');
    for (const [name, file] of read) {
      if ((SECRETS.api as readonly string[]).includes(name)) continue; // handed over on a descriptor
      if (name === 'ENCLAVE_USER') continue; // the supervisor sets it itself, as the uid it resolved
      assert.ok(
        allowedFor('api', name),
        `${name} (read in ${file}) is missing from API_VARS in bin/supervisor/child-env.ts`,
      );
    }
    assert.ok(API_VARS.includes('PORT'));
  });

  test('every variable the enclave reads is on its list, or a secret it gets on a descriptor', () => {
    const read = variablesRead(sources('enclave'), () => false);
    assert.ok(read.has('DATA_DIR'), 'the scan finds what enclave/main.ts reads');
    for (const [name, file] of read) {
      if (name === 'CREDENTIALS_DIRECTORY') continue; // systemd's, for the enclave run alone
      if ((SECRETS.enclave as readonly string[]).includes(name)) continue;
      assert.ok(allowedFor('enclave', name), `${name} (read in ${file}) is not passed to the enclave`);
    }
  });
});
