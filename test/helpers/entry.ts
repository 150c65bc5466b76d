/**
 * How tests start the project's own processes (the supervisor, the API, the enclave, the operator CLI): from the
 * bundles `npm test` builds once before the first test (test/run.ts: `npm run build`, the bundles `npm start` runs,
 * plus the CLI), or from the TypeScript sources under tsx when a test file runs alone. A process under tsx spends a
 * second or more of CPU compiling its modules before its first line (the API about four, the CLI about one and a
 * half, against a third of a second for its bundle); the suite starts a few hundred of them.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The directory of the bundles test/run.ts built, when it did. */
export const TEST_BUNDLES_ENV = 'WCS_TEST_BUNDLES';

export type Entry = 'main' | 'api/main' | 'enclave/main' | 'bin/admin';

/** The module to run and the node flags it needs: a bundle when there is one, else the source under tsx. */
export function entryOf(entry: Entry): { file: string; execArgv: string[] } {
  const bundles = process.env[TEST_BUNDLES_ENV];
  if (bundles) return { file: path.join(bundles, `${entry}.js`), execArgv: ['--enable-source-maps'] };
  return { file: path.join(ROOT, `${entry}.ts`), execArgv: ['--import', 'tsx'] };
}

/** `node`'s arguments that run `entry` with `args`, for spawn and execFile. */
export function nodeArgs(entry: Entry, ...args: string[]): string[] {
  const { file, execArgv } = entryOf(entry);
  return [...execArgv, file, ...args];
}
