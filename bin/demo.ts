/**
 * `npm run demo`: local chains plus the service, with a funded example, so a newcomer sends a transfer in a
 * minute. Starts anvil (an EVM chain, id 31337, a block a second) and the Solana façade over LiteSVM (as
 * SOLANA_DEVNET), writes a CHAINS_FILE for them, starts the service (`main.ts`, supervisor, enclave and API) on a
 * fresh data directory, creates a project, a development API key, an EVM and a Solana wallet, funds both, and
 * prints the requests to try, how to reach the admin API and CLI, and how to point a webhook at a receiver on this
 * machine. Ctrl-C stops everything it started. Local chains only: never a real network.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { startAnvil } from '../fixtures/anvil.ts';
import { setBalance } from '../fixtures/evm-helpers.ts';
import { freePort } from '../fixtures/free-port.ts';
import { airdrop } from '../fixtures/solana-facade/facade-client.ts';
import { startSolanaFacade } from '../fixtures/solana-facade.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function json(url: string, init: RequestInit & { body?: string }): Promise<Record<string, string>> {
  const r = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const body = (await r.json()) as Record<string, string>;
  if (r.status >= 300) throw new Error(`${init.method ?? 'GET'} ${url} answered ${r.status}: ${JSON.stringify(body)}`);
  return body;
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-demo-'));
  console.log('starting anvil and the Solana façade …');
  const [anvil, solana] = await Promise.all([
    startAnvil({ blockTimeSeconds: 1, slotsInAnEpoch: 1 }),
    startSolanaFacade({ slotMs: 100 }),
  ]);
  const chainsFile = path.join(dataDir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify(
      {
        evm: [{ chainId: 31337, rpcUrl: anvil.rpcUrl, environment: 'any' }],
        solana: [{ network: 'SOLANA_DEVNET', rpcUrl: solana.rpcUrl }],
      },
      null,
      2,
    ),
  );
  const port = Number(process.env['PORT'] ?? 8080);
  const adminPort = await freePort();
  const adminToken = randomBytes(24).toString('hex');
  let service: ChildProcess | undefined;
  const stop = async () => {
    if (service && service.exitCode === null) {
      await new Promise<void>((resolve) => {
        service!.once('exit', () => resolve());
        service!.kill('SIGTERM');
      });
    }
    await Promise.all([anvil.stop(), solana.stop()]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(0)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

  console.log('starting the service …');
  service = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN: adminToken,
      CHAINS_FILE: chainsFile,
      CHAIN_POLL_INTERVAL_MS: '500',
      LOG_LEVEL: 'warn',
      // A webhook receiver on this machine (loopback) is what a demo has; the service refuses one by default.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (service.exitCode !== null || i > 600) throw new Error('the service did not start (see its output above)');
    await new Promise((r) => setTimeout(r, 100));
  }

  const admin = { authorization: `Bearer ${adminToken}` };
  const project = await json(`${adminUrl}/admin/v1/projects`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ name: 'demo', plan: 'growth' }),
  });
  const key = await json(`${adminUrl}/admin/v1/projects/${project.id}/api-keys`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ environment: 'development' }),
  });
  const partner = { 'x-api-key': key['secretKey']! };
  const evm = await json(`${url}/v1/wallets`, {
    method: 'POST',
    headers: partner,
    body: JSON.stringify({ type: 'EVM', userIdentifier: 'demo-user', userIdentifierType: 'CUSTOM_ID' }),
  });
  const sol = await json(`${url}/v1/wallets`, {
    method: 'POST',
    headers: partner,
    body: JSON.stringify({ type: 'SOLANA', userIdentifier: 'demo-user', userIdentifierType: 'CUSTOM_ID' }),
  });
  await setBalance(anvil.rpcUrl, evm['address']!, 10n ** 19n);
  await airdrop(new Connection(solana.rpcUrl, 'confirmed'), new PublicKey(sol['address']!), 5_000_000_000);

  const k = key['secretKey']!;
  const hookUrl = 'https://localhost:9443/hooks';
  const hookBody = JSON.stringify({ url: hookUrl, events: ['wallet.created', 'rest.transaction.confirmed'] });
  console.log(`
The service is up on ${url} with two local chains (EVM chain 31337 on anvil, SOLANA_DEVNET on the LiteSVM façade).
Project ${project.id} (${project.name}, plan ${project.plan}, ${project.rateLimitPerMinute} requests a minute per key)
API key ${key.id} (development), secret: ${k}
Admin API ${adminUrl}, token: ${adminToken} (given to the service as ADMIN_TOKEN: no token file is written)
EVM wallet ${evm.id} (${evm.address}) holds 10 ETH; Solana wallet ${sol.id} (${sol.address}) holds 5 SOL.

Send 0.001 ETH, then follow the record to "confirmed" (a block a second, final two blocks later):
  curl -s -X POST ${url}/v1/wallets/${evm.id}/transfer -H 'x-api-key: ${k}' -H 'content-type: application/json' \\
    -d '{"to":"0x000000000000000000000000000000000000bEEF","value":"1000000000000000","chainId":"31337"}'
  curl -s ${url}/v1/wallets/${evm.id}/transactions -H 'x-api-key: ${k}'

Send 0.01 SOL on the devnet façade:
  curl -s -X POST ${url}/v1/wallets/${sol.id}/transfer -H 'x-api-key: ${k}' -H 'content-type: application/json' \\
    -d '{"to":"${Keypair.generate().publicKey.toBase58()}","value":"10000000","network":"SOLANA_DEVNET"}'
  curl -s ${url}/v1/wallets/${sol.id}/transactions -H 'x-api-key: ${k}'

The operator CLI, from another terminal in this directory (it reads the admin port and token from these):
  export ADMIN_PORT=${adminPort} ADMIN_TOKEN=${adminToken}
  npm run admin -- list-projects
  npm run admin -- list-keys ${project.id}

Webhooks: the URL must be HTTPS (HTTP is refused). This demo runs the service with WEBHOOK_ALLOW_PRIVATE_TARGETS=1,
so a receiver on this machine is allowed (by default loopback and private addresses are refused); the service must
trust the receiver's certificate: start the demo with NODE_EXTRA_CA_CERTS=<its CA or self-signed certificate file>.
With a receiver on ${hookUrl}:
  npm run admin -- set-webhook ${key.id} ${hookUrl} --events wallet.created,rest.transaction.confirmed
  npm run admin -- test-webhook ${key.id}
or with curl:
  curl -s -X PUT ${adminUrl}/admin/v1/api-keys/${key.id}/webhook -H 'authorization: Bearer ${adminToken}' \\
    -H 'content-type: application/json' -d '${hookBody}'
The first answer shows the whsec_ signing secret, once (docs/api-guide.md "Webhooks": verifying a delivery).

API reference: ${url}/docs. Ctrl-C stops the service and both chains (the data directory is removed).
`);
}

await main();
