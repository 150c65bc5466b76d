/**
 * How `npm test` runs the unit files (`*.test.ts` beside the code, and the `*.spec.ts` outside `test/`): a few
 * processes, each importing a group of them, rather than one process per file. Each process under tsx costs about
 * a second of CPU before its first test, and more for every library it loads (viem, @solana/web3.js, the API's
 * modules); one process per group pays that once for its files. The end-to-end specs (`test/*.spec.ts`) still run
 * one per process: they start services and kill processes.
 *
 * Each group is an entry file `test/unit/<name>.group.ts` that calls `importGroup('<name>')`. A unit file belongs to
 * the first group below whose prefixes match its path; the last group takes every file no other group took, so a
 * new unit file always runs. Each file's tests run inside a suite named after the file, and its module is imported
 * when that suite's turn comes (after the previous file's tests and `after` hooks), as if it ran alone.
 * Any file still runs alone too: `node --import tsx --test chains/evm/evm-chain.test.ts`.
 */
import { AsyncResource } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Where unit files are looked for (as `npm test` always did). */
const ROOTS = ['test', 'api', 'actors', 'enclave', 'chains', 'store', 'fixtures', 'client'];

/**
 * The groups, in order of precedence: a file goes to the first one with a prefix of its path. The split keeps each
 * group's run time near the others' (measured, `npm test`'s summary per group), so that two workers end together.
 */
export const GROUPS: Record<string, string[]> = {
  'chains-evm': ['chains/evm/'],
  chains: ['chains/'],
  'enclave-processes': [
    'enclave/server.test.ts',
    'enclave/effect-keys.test.ts',
    'enclave/key-rotation.test.ts',
    'enclave/share-migration.test.ts',
  ],
  enclave: ['enclave/'],
  api: ['api/'],
  rest: [''],
};

/** Every unit file, relative to the repository root, sorted: `*.test.ts` anywhere, `*.spec.ts` outside `test/`. */
export function unitFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (rel.endsWith('.test.ts') || (rel.endsWith('.spec.ts') && !rel.startsWith('test/'))) found.push(rel);
    }
  };
  for (const dir of ROOTS) walk(dir);
  return found.sort();
}

/** The group a unit file belongs to. */
export function groupOf(file: string): string {
  for (const [name, prefixes] of Object.entries(GROUPS)) {
    if (prefixes.some((p) => file.startsWith(p))) return name;
  }
  throw new Error(`no group takes ${file}: the last group of GROUPS must take every file`);
}

/** The entry files present in test/unit/, by group name. */
function entryFiles(): string[] {
  return fs
    .readdirSync(path.join(ROOT, 'test/unit'))
    .filter((f) => f.endsWith('.group.ts'))
    .map((f) => f.slice(0, -'.group.ts'.length))
    .sort();
}

/**
 * Registers one suite per unit file of the group `name`, each importing its file when it runs. Throws (and so fails
 * the group) if the groups and their entry files disagree, which would leave files unrun.
 */
export function importGroup(name: string): void {
  const entries = entryFiles();
  const names = Object.keys(GROUPS).sort();
  if (JSON.stringify(entries) !== JSON.stringify(names)) {
    throw new Error(`test/unit/*.group.ts (${entries.join(', ')}) must be the groups of GROUPS (${names.join(', ')})`);
  }
  const files = unitFiles().filter((f) => groupOf(f) === name);
  if (files.length === 0) throw new Error(`the group ${name} has no unit file`);
  // Each suite waits for the one before it to finish: a file's module (and whatever it starts at its top level) is
  // loaded when its own tests are about to run, not all at once when the group starts.
  let previous: Promise<void> = Promise.resolve();
  for (const file of files) {
    const turn = previous;
    let done!: () => void;
    previous = new Promise<void>((resolve) => {
      done = resolve;
    });
    describe(file, async () => {
      after(() => done());
      // node:test finds the suite a `test()` belongs to from the async context it is called in; awaiting `turn`
      // (made outside this suite) leaves that context, so the import runs in a scope made here, inside it.
      const scope = new AsyncResource('unit-file');
      await turn;
      try {
        await scope.runInAsyncScope(() => import(pathToFileURL(path.join(ROOT, file)).href));
      } catch (err) {
        done();
        throw err;
      }
    });
  }
}
