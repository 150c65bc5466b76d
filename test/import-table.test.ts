/**
 * The structure rules of DESIGN §1, enforced. The import table: every production file's imports (static, type-only,
 * re-exports and dynamic ones, as TypeScript's own pre-processor reads them) are resolved to the files they name, and
 * each arrow from one part of the tree to another must be one the table allows; a failure names the file, the import
 * and the rule it breaks. And one error base: every error class extends the domain's CodedError.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { ROOT } from './helpers/service.ts';

/** Where a file sits, from the most specific part of the tree to the least. */
const PARTS = [
  'chains/domain/',
  'chains/',
  'store/',
  'enclave/client.ts',
  'enclave/public.ts',
  'enclave/',
  'actors/',
  'api/',
  'bin/',
  'main.ts',
  'client/src/',
  'client/',
  'fixtures/',
  'test/',
] as const;
type Part = (typeof PARTS)[number];

/** The enclave as the API and the actors may see it: its client, and the small surface beside it. */
const ENCLAVE_FACE: Part[] = ['enclave/client.ts', 'enclave/public.ts'];
const PRODUCTION: Part[] = [
  'chains/domain/',
  'chains/',
  'store/',
  ...ENCLAVE_FACE,
  'enclave/',
  'actors/',
  'api/',
  'bin/',
  'main.ts',
];

/** What each part of the production tree may import (of this repository; packages are not arrows of the table). */
const MAY_IMPORT: Partial<Record<Part, { parts: Part[]; why: string }>> = {
  'chains/domain/': {
    parts: ['chains/domain/'],
    why: 'the domain vocabulary imports nothing but itself: every layer may import it',
  },
  'chains/': { parts: ['chains/domain/', 'chains/'], why: 'chains/ is the bottom layer: only itself and the domain' },
  'store/': { parts: ['chains/domain/', 'store/'], why: 'store/ imports nothing of ours but the domain' },
  'enclave/client.ts': {
    parts: ['chains/domain/', 'chains/', ...ENCLAVE_FACE, 'enclave/'],
    why: 'the enclave imports nothing of api/, actors/ or store/',
  },
  'enclave/public.ts': {
    parts: ['chains/domain/', 'chains/', ...ENCLAVE_FACE, 'enclave/'],
    why: 'the enclave imports nothing of api/, actors/ or store/',
  },
  'enclave/': {
    parts: ['chains/domain/', 'chains/', ...ENCLAVE_FACE, 'enclave/'],
    why: 'the enclave imports nothing of api/, actors/ or store/',
  },
  'actors/': {
    parts: ['chains/domain/', 'chains/', 'store/', ...ENCLAVE_FACE, 'actors/'],
    why: 'actors/ reaches chains/, store/ and the enclave through its client (and public surface) only; never api/',
  },
  'api/': {
    parts: ['chains/domain/', 'chains/', 'store/', ...ENCLAVE_FACE, 'actors/', 'api/'],
    why: 'api/ reaches the enclave only through enclave/client and enclave/public',
  },
  'bin/': {
    parts: [...PRODUCTION, 'client/src/', 'client/', 'fixtures/'],
    why: 'the entries and tools wire every part; no production file imports test/',
  },
  'main.ts': { parts: [...PRODUCTION], why: 'the supervisor wires the processes; no production file imports test/' },
  'client/src/': { parts: ['client/src/'], why: 'the typed client is its own package' },
};

function partOf(file: string): Part | undefined {
  return PARTS.find((p) => (p.endsWith('/') ? file.startsWith(p) : file === p));
}

/** Production files: the parts the table governs, without tests. */
function productionFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'migrations') walk(rel);
      } else if (/\.(ts|mts)$/.test(e.name) && !/\.(test|spec)\.ts$/.test(e.name)) out.push(rel);
    }
  };
  for (const dir of ['api', 'actors', 'enclave', 'chains', 'store', 'bin', 'client/src']) walk(dir);
  out.push('main.ts');
  return out;
}

/** Every relative import of a file, resolved to a repository path. */
function importsOf(file: string): Array<{ spec: string; target: string }> {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)) }));
}

/** The arrows the table does not allow, as `file: import → target (rule)`. */
function violations(files: string[], read = importsOf): string[] {
  const out: string[] = [];
  for (const file of files) {
    const from = partOf(file);
    const rule = from ? MAY_IMPORT[from] : undefined;
    if (!from || !rule) {
      out.push(`${file}: not in any part of the import table`);
      continue;
    }
    for (const { spec, target } of read(file)) {
      const to = partOf(target);
      if (!to || !rule.parts.includes(to)) {
        out.push(`${file}: imports '${spec}' (${to ?? target}), which ${from} may not: ${rule.why}`);
      }
    }
  }
  return out;
}

test('every production import follows the import table of DESIGN §1', () => {
  const files = productionFiles();
  assert.ok(files.length > 200, `read ${files.length} production files`);
  const arrows = files.reduce((n, f) => n + importsOf(f).length, 0);
  assert.ok(arrows > 600, `read ${arrows} imports`);
  assert.deepEqual(violations(files), []);
});

test('the check names the file and the arrow of an import the table refuses', () => {
  const fake = (imports: Record<string, string[]>) => (file: string) =>
    (imports[file] ?? []).map((spec) => ({
      spec,
      target: path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)),
    }));
  const read = fake({
    'store/outbox-repo.ts': ['../api/webhooks/delivery-engine.ts', '../chains/domain/events.ts'],
    'api/server.ts': ['../enclave/key-store.ts', '../enclave/client.ts'],
    'chains/evm/evm-chain.ts': ['../../store/db.ts'],
    'bin/demo.ts': ['../test/helpers/service.ts'],
    'enclave/sign.ts': ['../actors/host/host.ts'],
  });
  const found = violations(
    ['store/outbox-repo.ts', 'api/server.ts', 'chains/evm/evm-chain.ts', 'bin/demo.ts', 'enclave/sign.ts'],
    read,
  );
  assert.deepEqual(found, [
    "store/outbox-repo.ts: imports '../api/webhooks/delivery-engine.ts' (api/), which store/ may not: store/ imports nothing of ours but the domain",
    "api/server.ts: imports '../enclave/key-store.ts' (enclave/), which api/ may not: api/ reaches the enclave only through enclave/client and enclave/public",
    "chains/evm/evm-chain.ts: imports '../../store/db.ts' (store/), which chains/ may not: chains/ is the bottom layer: only itself and the domain",
    "bin/demo.ts: imports '../test/helpers/service.ts' (test/), which bin/ may not: the entries and tools wire every part; no production file imports test/",
    "enclave/sign.ts: imports '../actors/host/host.ts' (actors/), which enclave/ may not: the enclave imports nothing of api/, actors/ or store/",
  ]);
});

test('every error class of the production tree extends CodedError, directly or through another of ours', () => {
  const classes = new Map<string, { base: string; file: string }>();
  for (const file of productionFiles()) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/\bclass (\w+) extends (\w+)/g)) classes.set(m[1]!, { base: m[2]!, file });
  }
  const errors = [...classes].filter(([name, c]) => /Error$|Failure$/.test(name) || c.base === 'Error');
  assert.ok(errors.length > 20, `found ${errors.length} error classes`);
  const rootOf = (name: string): string => {
    const c = classes.get(name);
    return c && name !== 'CodedError' ? rootOf(c.base) : name;
  };
  const outside = errors.filter(([name]) => rootOf(name) !== 'CodedError').map(([name, c]) => `${c.file}: ${name}`);
  assert.deepEqual(outside, []);
});
