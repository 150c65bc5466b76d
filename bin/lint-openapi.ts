/**
 * Lints both OpenAPI documents (the public listener's and the admin listener's) with Spectral and the committed
 * ruleset (.spectral.yaml): `npm run lint:openapi`. Fails on any finding, warnings included.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocuments } from '../api/openapi-document.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-openapi-'));
try {
  const docs = await openApiDocuments();
  const files = Object.entries(docs).map(([name, doc]) => {
    const file = path.join(dir, `${name}.openapi.json`);
    fs.writeFileSync(file, JSON.stringify(doc, null, 2));
    return file;
  });
  const r = spawnSync(
    path.join(root, 'node_modules/.bin/spectral'),
    ['lint', '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'warn', ...files],
    { stdio: 'inherit' },
  );
  process.exitCode = r.status ?? 1;
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
