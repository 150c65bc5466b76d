/**
 * The API's V8 flags (bin/supervisor/api-v8-flags.ts): this Node accepts them (an unknown flag stops `node` before the
 * API starts: "bad option"), and the systemd unit and `npm run start:api`, which start the API without the supervisor,
 * carry the same.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { API_V8_FLAGS } from '../bin/supervisor/api-v8-flags.ts';
import { ROOT } from './helpers/service.ts';

test('this Node starts with the API V8 flags', () => {
  const run = spawnSync(process.execPath, [...API_V8_FLAGS, '-e', 'process.stdout.write("started")'], {
    encoding: 'utf8',
  });
  assert.equal(run.stderr, '');
  assert.equal(run.status, 0);
  assert.equal(run.stdout, 'started');
});

/** Asserts that `command` runs dist/api/main.js with every flag of API_V8_FLAGS before it. */
function assertFlagsBeforeScript(command: string): void {
  const argv = command.split(/\s+/);
  const script = argv.indexOf('dist/api/main.js');
  assert.ok(script > 0, `${command} runs dist/api/main.js`);
  for (const flag of API_V8_FLAGS) {
    const at = argv.indexOf(flag);
    assert.ok(at > 0 && at < script, `${flag} comes before the script on ${command}`);
  }
}

test('the systemd unit and `npm run start:api` start the API with the same V8 flags as the supervisor', () => {
  const unit = readFileSync(join(ROOT, 'bin/systemd/wallet-api.service'), 'utf8');
  const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1];
  assert.ok(execStart, 'the unit has an ExecStart line');
  assertFlagsBeforeScript(execStart);
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts;
  assertFlagsBeforeScript(scripts['start:api']!);
});
