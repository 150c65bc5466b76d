/**
 * Spectral, with the committed ruleset (.spectral.yaml), on both OpenAPI documents: clean, warnings included. And a
 * document with a defect planted is refused, so the lint is known to look.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { openApiDocuments } from '../api/openapi-document.ts';
import { ROOT } from './helpers/service.ts';

let dir: string;
let docs: Record<string, any>;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-spectral-'));
  docs = await openApiDocuments();
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function lint(name: string, doc: unknown): { status: number | null; out: string } {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(doc));
  const r = spawnSync(
    path.join(ROOT, 'node_modules/.bin/spectral'),
    ['lint', '--ruleset', path.join(ROOT, '.spectral.yaml'), '--fail-severity', 'warn', file],
    { encoding: 'utf8' },
  );
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('both OpenAPI documents pass Spectral with the committed ruleset', () => {
  for (const [name, doc] of Object.entries(docs)) {
    const r = lint(name, doc);
    assert.equal(r.status, 0, `${name}:\n${r.out}`);
  }
});

test('a document with an undescribed operation and an undefined tag is refused', () => {
  const broken = structuredClone(docs['public']);
  const op = broken.paths['/v1/wallets'].post;
  delete op.description;
  op.tags = ['no-such-tag'];
  const r = lint('broken', broken);
  assert.notEqual(r.status, 0);
  assert.match(r.out, /operation-description/);
  assert.match(r.out, /operation-tag-defined/);
});

test('an operation without a success answer is refused unless it is marked x-always-error, and then it may have none', () => {
  const marked = '/v1/permissions-v2/users/{userId}/delegation-consents';
  assert.deepEqual(docs['public'].paths[marked].get['x-always-error'], {
    status: 400,
    code: 'permissions_v2_extension_unavailable',
  });
  const broken = structuredClone(docs['public']);
  delete broken.paths['/v1/wallets'].post.responses['201'];
  broken.paths[marked].get.responses['200'] = structuredClone(broken.paths['/v1/wallets'].get.responses['200']);
  broken.paths[marked].put['x-always-error'] = { status: 400 };
  const r = lint('no-success', broken);
  assert.notEqual(r.status, 0);
  const flagged = r.out.split('\n').filter((line) => line.includes('operation-success-response-or-always-error'));
  assert.equal(flagged.length, 3, r.out);
  for (const where of ['/v1/wallets.post', `${marked}.get`, `${marked}.put`]) {
    assert.ok(
      flagged.some((line) => line.includes(where)),
      `${where} not flagged:\n${r.out}`,
    );
  }
});
