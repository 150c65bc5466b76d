/**
 * Writes the API guide's generated tables (docs/api-guide.md): the error catalogue (chains/domain/error-catalogue.ts)
 * between `<!-- errors:begin -->` and `<!-- errors:end -->`, and the partner routes (from the public OpenAPI
 * document) between `<!-- routes:begin -->` and `<!-- routes:end -->`: `npm run docs:errors`.
 * api/error-catalogue.test.ts fails while either differs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocuments } from '../api/openapi-document.ts';
import { renderRoutesTable } from '../api/openapi-routes-table.ts';
import { renderErrorTable } from '../chains/domain/error-catalogue.ts';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../docs/api-guide.md');
let readme = fs.readFileSync(file, 'utf8');
const doc = (await openApiDocuments()).public as Parameters<typeof renderRoutesTable>[0];
for (const [name, table] of [
  ['errors', renderErrorTable()],
  ['routes', renderRoutesTable(doc)],
] as const) {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const a = readme.indexOf(begin);
  const b = readme.indexOf(end);
  if (a < 0 || b < a) throw new Error(`docs/api-guide.md lacks the ${begin} / ${end} markers`);
  readme = `${readme.slice(0, a + begin.length)}\n${table}\n${readme.slice(b)}`;
}
fs.writeFileSync(file, readme);
console.log('docs/api-guide.md: error and route tables written');
