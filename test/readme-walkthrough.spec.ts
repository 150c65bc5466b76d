/**
 * The README's "first hour" block, run verbatim against a real service: extracted from between its markers, saved
 * at the repository root (so `@wallet-custody/client` and `viem` resolve as they do for a reader who saves it
 * there) and run with tsx, as the README says.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { verifyMessage } from 'viem';
import { ROOT, startTestService, type TestService } from './helpers/service.ts';

const run = promisify(execFile);
let svc: TestService;
const file = path.join(ROOT, `first-hour-${process.pid}.ts`);

before(async () => {
  svc = await startTestService();
});
after(async () => {
  fs.rmSync(file, { force: true });
  await svc.stop();
});

test("the README's first-hour block creates a wallet, signs, and viem verifies the signature", async () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- walkthrough:begin -->\n```ts\n([\s\S]*?)```\n<!-- walkthrough:end -->/.exec(readme)?.[1];
  assert.ok(block, 'README.md has the walkthrough block between its markers');
  fs.writeFileSync(file, block);
  const partner = await svc.newPartner({ plan: 'free' });
  const { stdout } = await run(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, BASE_URL: svc.url, API_KEY: partner.secret },
  });
  const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { walletId: string; address: string; valid: boolean };
  assert.equal(out.valid, true);
  const w = await svc.v1(partner.secret, 'GET', `/wallets/${out.walletId}`);
  assert.equal(w.status, 200);
  assert.equal(w.body.address, out.address, "the wallet the block created is the partner's");
  assert.equal(
    await verifyMessage({
      address: out.address as `0x${string}`,
      message: 'x',
      signature: `0x${'00'.repeat(65)}`,
    }).catch(() => false),
    false,
    'verifyMessage does refuse a wrong signature',
  );
});
