import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_CATALOGUE, isCatalogued, renderErrorTable, statusesOf } from '../chains/domain/error-catalogue.ts';
import { openApiDocuments } from './openapi-document.ts';
import { renderRoutesTable } from './openapi-routes-table.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The service's source files (tests and fixtures left out). */
function sources(): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (rel.endsWith('.ts') && !/\.(test|spec)\.ts$/.test(rel)) {
        out.push({ file: rel, text: fs.readFileSync(path.join(ROOT, rel), 'utf8') });
      }
    }
  };
  for (const dir of ['api', 'actors', 'store', 'chains', 'enclave']) walk(dir);
  return out;
}

test('every error the source raises with a literal code and status is in the catalogue with that status', () => {
  const raised = /new (?:ServiceError|ActorHostError)\(\s*'([A-Za-z0-9_]+)',\s*(\d{3})/g;
  const answered = /\bstatus: (\d{3}),\s*code: '([A-Z0-9_]+)'|\bcode: '([A-Z0-9_]+)',\s*status: (\d{3})/g;
  const found: string[] = [];
  const wrong: string[] = [];
  for (const { file, text } of sources()) {
    for (const m of text.matchAll(raised)) {
      found.push(m[1]!);
      if (!isCatalogued(m[1]!, Number(m[2]))) wrong.push(`${file}: ${m[1]} ${m[2]}`);
    }
    for (const m of text.matchAll(answered)) {
      const [code, status] = m[2] ? [m[2], m[1]] : [m[3]!, m[4]];
      found.push(code);
      if (!isCatalogued(code, Number(status))) wrong.push(`${file}: ${code} ${status}`);
    }
  }
  assert.deepEqual(wrong, [], 'raised or answered outside the catalogue');
  assert.ok(found.length > 60, `the scan found ${found.length} raised codes: it reads the source`);
});

test('the store, enclave client and actor host codes that reach answers are catalogued', () => {
  for (const code of [
    'STORE_BUSY',
    'STORE_ERROR',
    'STORE_OVERLOADED',
    'STORE_SYNC_FAILED',
    'ENCLAVE_UNAVAILABLE',
    'ENCLAVE_TIMEOUT',
    'SERVICE_BUSY',
    'SERVICE_STOPPING',
    'ACTOR_FAULTED',
    'NEXT_KEY_MISSING',
    'NEXT_KEY_MISMATCH',
    'PAYLOAD_TOO_LARGE',
    'INVALID_PAYLOAD',
  ]) {
    assert.ok(statusesOf(code).length > 0, code);
  }
  const storeText = fs.readFileSync(path.join(ROOT, 'store/errors.ts'), 'utf8');
  assert.match(storeText, /'STORE_BUSY' : 'STORE_ERROR'/, 'the store codes this test lists are the ones it raises');
});

test('every entry has a 4xx or 5xx status and a meaning; context fields are named in camelCase', () => {
  for (const [code, e] of Object.entries(ERROR_CATALOGUE)) {
    // Upper case, except the spec's own lower-case policy record codes (permissions_v2_extension_unavailable, …).
    assert.match(code, /^(?:[A-Z][A-Z0-9_]+|[a-z][a-z0-9_]+)$/);
    for (const s of statusesOf(code)) assert.ok(s >= 400 && s <= 599, `${code}: ${s}`);
    assert.ok(e.meaning.length > 10, code);
    for (const f of ('context' in e ? e.context : []) ?? []) assert.match(f, /^[a-z][A-Za-z]+$/, code);
  }
});

test("the API guide's error table is the catalogue's", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'docs/api-guide.md'), 'utf8');
  const start = readme.indexOf('<!-- errors:begin -->');
  const end = readme.indexOf('<!-- errors:end -->');
  assert.ok(start >= 0 && end > start, 'docs/api-guide.md has the errors:begin / errors:end markers');
  const table = readme.slice(start + '<!-- errors:begin -->'.length, end).trim();
  assert.equal(table, renderErrorTable().trim(), 'regenerate it: npm run docs:errors');
});

test("the API guide's route table is the public OpenAPI document's", async () => {
  const readme = fs.readFileSync(path.join(ROOT, 'docs/api-guide.md'), 'utf8');
  const start = readme.indexOf('<!-- routes:begin -->');
  const end = readme.indexOf('<!-- routes:end -->');
  assert.ok(start >= 0 && end > start, 'docs/api-guide.md has the routes:begin / routes:end markers');
  const doc = (await openApiDocuments()).public as Parameters<typeof renderRoutesTable>[0];
  const table = readme.slice(start + '<!-- routes:begin -->'.length, end).trim();
  assert.equal(table, renderRoutesTable(doc).trim(), 'regenerate it: npm run docs:errors');
  assert.ok(
    table.includes('`POST /v1/wallets` | Create a wallet | **type**, **userIdentifier**, **userIdentifierType**'),
  );
});
