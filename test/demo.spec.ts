/**
 * `npm run demo` end to end, as a newcomer runs it: bin/demo.ts starts its own anvil (Sepolia's chain id, the local
 * lending protocol), Solana façade and service, and runs its yield deposit; what it prints is what is checked (the
 * deposit confirmed through an approval and a supply, the position before and after), then the requests it tells the
 * reader to send answer as it says (a transfer, the position), and Ctrl-C stops everything and removes its data
 * directory.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../fixtures/free-port.ts';
import { ROOT } from './helpers/service.ts';

let demo: ChildProcess | undefined;

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

after(async () => {
  if (demo && demo.exitCode === null && demo.signalCode === null) {
    demo.kill('SIGINT');
    const timer = setTimeout(() => demo?.kill('SIGKILL'), 30_000);
    await exited(demo);
    clearTimeout(timer);
  }
});

test('the demo deposits through the yield API, prints the position before and after, and its printed requests work', {
  timeout: 240_000,
}, async () => {
  const port = await freePort();
  demo = spawn(process.execPath, ['--import', 'tsx', 'bin/demo.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  demo.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  demo.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const deadline = Date.now() + 200_000;
  while (!/API reference: /.test(out)) {
    if (demo.exitCode !== null) assert.fail(`the demo exited with ${demo.exitCode}:\n${out}`);
    if (Date.now() > deadline) assert.fail(`the demo printed no API reference line within 200 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  assert.match(out, /EVM chain 11155111 on anvil/);
  assert.match(out, /position before: supplied 0 USDC, withdrawable 0 \(block \d+\)/);
  assert.match(
    out,
    /deposit of 250 USDC, operation [0-9a-f-]{36}: pending → (submitted → )?confirmed in [\d.]+ s \(approve, then supply\)/,
  );
  assert.match(out, /position after: +supplied 250 USDC, withdrawable 250 \(block \d+\)/);

  const url = /The service is up on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
  const secret = /secret: (sk_dev_\S+)/.exec(out)?.[1];
  const wallet = /EVM wallet ([0-9a-f-]{36}) \(0x[0-9a-fA-F]{40}\) holds 10 ETH and 750 USDC/.exec(out)?.[1];
  const dataDir = /NEW MASTER KEY created at (\S+)\/enclave\/master\.key/.exec(out)?.[1];
  assert.equal(url, `http://127.0.0.1:${port}`);
  assert.ok(secret && wallet && dataDir, out);
  const headers = { 'x-api-key': secret, 'content-type': 'application/json' };

  // The transfer the demo prints, as it prints it.
  const transfer = await fetch(`${url}/v1/wallets/${wallet}/transfer`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      to: '0x000000000000000000000000000000000000bEEF',
      value: '1000000000000000',
      chainId: '11155111',
    }),
  });
  const sent = (await transfer.json()) as { status: string; transactionId: string };
  assert.equal(transfer.status, 200, JSON.stringify(sent));
  assert.equal(sent.status, 'submitted');

  const position = await fetch(`${url}/v1/wallets/${wallet}/yield/position?chainId=11155111`, { headers });
  assert.equal(position.status, 200);
  const body = (await position.json()) as { suppliedBalance: string; withdrawal: { availableAmount: string } };
  assert.equal(body.suppliedBalance, '250');
  assert.equal(body.withdrawal.availableAmount, '250');

  // Ctrl-C: everything stops and the data directory is removed.
  demo.kill('SIGINT');
  assert.equal(await exited(demo), 0);
  assert.equal(fs.existsSync(path.resolve(dataDir!)), false, 'the data directory is removed');
});
