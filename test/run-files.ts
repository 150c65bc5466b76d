/**
 * Runs test files with node:test's `run()`, two processes at a time, in the order given (test/run.ts hands them over
 * longest first). `node --test` would sort them by path. Options: `--test-reporter=<spec|tap|dot|module>` (default:
 * spec on a terminal, tap otherwise, as `node --test`) and `--test-reporter-destination=<file|stdout|stderr>`.
 * Exits 1 when a test failed, as `node --test` does.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { run } from 'node:test';
import * as reporters from 'node:test/reporters';
import { pathToFileURL } from 'node:url';

const options = new Map<string, string>();
const files: string[] = [];
for (const arg of process.argv.slice(2)) {
  const option = /^--(test-reporter|test-reporter-destination)=(.+)$/.exec(arg);
  if (option) options.set(option[1]!, option[2]!);
  else if (arg.startsWith('-')) {
    console.error(
      `test/run-files.ts: unknown option ${arg} (it takes --test-reporter= and --test-reporter-destination=)`,
    );
    process.exit(2);
  } else files.push(path.resolve(arg));
}

const builtIn: Record<string, unknown> = { spec: reporters.spec, tap: reporters.tap, dot: reporters.dot };
const name = options.get('test-reporter') ?? (process.stdout.isTTY ? 'spec' : 'tap');
const chosen =
  builtIn[name] ?? ((await import(pathToFileURL(path.resolve(name)).href)) as { default: unknown }).default;
// The spec reporter is a class (a Transform); the others are async generator functions.
const reporter = name === 'spec' ? new reporters.spec() : chosen;

const where = options.get('test-reporter-destination') ?? 'stdout';
const destination: Writable =
  where === 'stdout' ? process.stdout : where === 'stderr' ? process.stderr : fs.createWriteStream(where);

const stream = run({ files, concurrency: 2 });
stream.on('test:fail', (data: { todo?: unknown }) => {
  if (!data.todo) process.exitCode = 1;
});
stream.compose(reporter as Parameters<typeof stream.compose>[0]).pipe(destination);
