/**
 * The documentation's links hold: every relative link of the README, docs/ and the folders' READMEs names a file of
 * the repository, and every `#anchor` a heading of the file it points to (GitHub's slugs). No link leaves the
 * repository but for full URLs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/service.ts';

const DOCS = [
  'README.md',
  ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => `docs/${f}`),
  'actors/README.md',
  'enclave/README.md',
  'client/README.md',
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

test('every relative link of the documentation names a file and heading that exist', () => {
  const broken: string[] = [];
  let links = 0;
  for (const doc of DOCS) {
    const text = fs.readFileSync(path.join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      links += 1;
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? doc : path.posix.normalize(path.posix.join(path.posix.dirname(doc), file));
      if (resolved.startsWith('..') || !fs.existsSync(path.join(ROOT, resolved))) {
        broken.push(`${doc}: ${target} (no file ${resolved})`);
      } else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
        broken.push(`${doc}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
  }
  assert.ok(links > 30, `read ${links} links`);
  assert.deepEqual(broken, []);
});
