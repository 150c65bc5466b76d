/**
 * Writes the error catalogue (api/error-catalogue.ts) into README.md between `<!-- errors:begin -->` and
 * `<!-- errors:end -->`: `npm run docs:errors`. api/error-catalogue.test.ts fails while the two differ.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderErrorTable } from '../api/error-catalogue.ts';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../README.md');
const readme = fs.readFileSync(file, 'utf8');
const begin = '<!-- errors:begin -->';
const end = '<!-- errors:end -->';
const a = readme.indexOf(begin);
const b = readme.indexOf(end);
if (a < 0 || b < a) throw new Error(`README.md lacks the ${begin} / ${end} markers`);
fs.writeFileSync(file, `${readme.slice(0, a + begin.length)}\n${renderErrorTable()}\n${readme.slice(b)}`);
console.log('README.md: error table written');
