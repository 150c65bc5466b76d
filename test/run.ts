/**
 * `npm test`: runs every test file with node:test, two processes at a time, the way test/groups/groups.ts says: the
 * specs in no group one process each, and each group in one process. Options given after `npm test --` go to
 * `node --test` (`npm test -- --test-reporter=spec`).
 */
import { spawn } from 'node:child_process';
import { ROOT, testFiles } from './groups/groups.ts';

const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', ...process.argv.slice(2), ...testFiles()],
  { cwd: ROOT, stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
