/**
 * Regenerates the typed client's contract from the routes: `client/openapi.json` (the public listener's OpenAPI
 * document) and `client/src/schema.ts` (its TypeScript types, by openapi-typescript). `npm run client:generate`;
 * client/client-drift.test.ts fails while the committed files differ from what this writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientFiles } from '../client/generate.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const [file, text] of Object.entries(await clientFiles())) {
  fs.writeFileSync(path.join(root, 'client', file), text);
  console.log(`client/${file} written`);
}
