/**
 * `npm test`: builds the bundles the tests start their processes from (`npm run build`, what `npm start` runs, plus
 * the operator CLI, into a directory of this run: test/helpers/entry.ts), then runs every test file with node:test,
 * two processes at a time, the way test/groups/groups.ts says: the specs in no group one process each, and each group
 * in one process, the longest first (test/run-files.ts). Options given after `npm test --` go to test/run-files.ts
 * (`npm test -- --test-reporter=spec`).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, testFiles } from './groups/groups.ts';
import { TEST_BUNDLES_ENV } from './helpers/entry.ts';

const bundles = path.join(ROOT, '.tmp', `test-bundles-${process.pid}`);
const built = spawnSync('npm', ['run', 'build', '--silent', '--', 'bin/admin.ts', `--outdir=${bundles}`], {
  cwd: ROOT,
  stdio: 'inherit',
});
if (built.status !== 0) {
  console.error('npm test: the build failed; no test ran');
  process.exit(1);
}
const removeBundles = () => fs.rmSync(bundles, { recursive: true, force: true });

const child = spawn(
  process.execPath,
  ['--import', 'tsx', path.join(ROOT, 'test/run-files.ts'), ...process.argv.slice(2), ...testFiles()],
  { cwd: ROOT, stdio: 'inherit', env: { ...process.env, [TEST_BUNDLES_ENV]: bundles } },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  removeBundles();
  process.exitCode = code ?? (signal ? 1 : 0);
});
