import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { clientFiles } from './generate.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

test('the committed client (openapi.json, src/schema.ts) is what the routes generate now', async () => {
  for (const [file, text] of Object.entries(await clientFiles())) {
    const committed = fs.readFileSync(path.join(here, file), 'utf8');
    assert.ok(committed === text, `client/${file} is out of date: run npm run client:generate and commit it`);
  }
});
