/**
 * `npm run demo`: local chains plus the service, with a funded example, so a newcomer sends a transfer in a
 * minute. Starts anvil (an EVM chain with Sepolia's chain id 11155111, a block a second, the local lending protocol
 * of fixtures/lending-protocol.ts placed at Sepolia's real Pool and USDC addresses) and the Solana façade over
 * LiteSVM (as SOLANA_DEVNET), writes a CHAINS_FILE for them, starts the service (`main.ts`, supervisor, enclave and
 * API) on a fresh data directory, creates a project, a development API key, an EVM and a Solana wallet, funds both
 * (the EVM one with ETH and local USDC), runs a yield deposit through the API to `confirmed` with the position
 * before and after, and prints the requests to try, how to reach the admin API and CLI, and how to point a webhook
 * at a receiver on this machine. Ctrl-C stops everything it started. Local chains only: never a real network (the
 * chain id is Sepolia's, the node is the local anvil).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { startAnvil } from '../fixtures/anvil.ts';
import { setBalance } from '../fixtures/evm-helpers.ts';
import { freePort } from '../fixtures/free-port.ts';
import { installLendingProtocol, SEPOLIA_CHAIN_ID } from '../fixtures/lending-protocol.ts';
import { airdrop } from '../fixtures/solana-facade/facade-client.ts';
import { startSolanaFacade } from '../fixtures/solana-facade.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function json<T = Record<string, string>>(url: string, init: RequestInit & { body?: string } = {}): Promise<T> {
  const r = await fetch(url, {
    ...init,
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
  });
  const body = (await r.json()) as T;
  if (r.status >= 300) throw new Error(`${init.method ?? 'GET'} ${url} answered ${r.status}: ${JSON.stringify(body)}`);
  return body;
}

/** The spec's Yield position and Yield operation, as far as the demo prints them. */
interface Position {
  suppliedBalance: string;
  withdrawal: { availableAmount: string | null };
  blockNumber: string;
}
interface Operation {
  id: string;
  status: string;
  amount: string;
  transactions: { type: string; status: string; hash: string | null }[];
  error: { code: string; message: string } | null;
}

const positionLine = (p: Position) =>
  `supplied ${p.suppliedBalance} USDC, withdrawable ${p.withdrawal.availableAmount ?? 'unknown'} (block ${p.blockNumber})`;

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-demo-'));
  console.log('starting anvil and the Solana façade …');
  const [anvil, solana] = await Promise.all([
    startAnvil({ chainId: SEPOLIA_CHAIN_ID, blockTimeSeconds: 1, slotsInAnEpoch: 1 }),
    startSolanaFacade({ slotMs: 100 }),
  ]);
  const protocol = await installLendingProtocol(anvil.rpcUrl);
  const chainsFile = path.join(dataDir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify(
      {
        evm: [{ chainId: SEPOLIA_CHAIN_ID, rpcUrl: anvil.rpcUrl, environment: 'any' }],
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
  // As `npm start` runs it: from its bundles (built in a few seconds), not from the sources under tsx, whose compiling
  // of every module can outlast the supervisor's 30 s wait for a child on a busy machine.
  const built = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the build failed (see its output above)');
  service = spawn(process.execPath, ['--enable-source-maps', 'dist/main.js'], {
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
  await protocol.fundUsdc(evm['address']!, 1_000_000_000n);

  // Yield: a deposit of 250 of the wallet's 1000 local USDC, followed to "confirmed" as a partner would poll it.
  const yieldBase = `${url}/v1/wallets/${evm.id}/yield`;
  const position = () => json<Position>(`${yieldBase}/position?chainId=${SEPOLIA_CHAIN_ID}`, { headers: partner });
  console.log(`yield: EVM wallet ${evm.address} holds 10 ETH and 1000 USDC (local lending protocol)`);
  console.log(`  position before: ${positionLine(await position())}`);
  const t0 = Date.now();
  let op = await json<Operation>(`${yieldBase}/deposits`, {
    method: 'POST',
    headers: { ...partner, 'idempotency-key': randomUUID() },
    body: JSON.stringify({ chainId: SEPOLIA_CHAIN_ID, amount: '250' }),
  });
  const seen = [op.status];
  while (op.status === 'pending' || op.status === 'submitted') {
    if (Date.now() - t0 > 120_000) throw new Error(`the demo's deposit is still ${op.status} after 120 s`);
    await new Promise((r) => setTimeout(r, 250));
    op = await json<Operation>(`${yieldBase}/operations/${op.id}`, { headers: partner });
    if (op.status !== seen[seen.length - 1]) seen.push(op.status);
  }
  if (op.status !== 'confirmed') throw new Error(`the demo's deposit ended ${op.status}: ${JSON.stringify(op.error)}`);
  console.log(
    `  deposit of ${op.amount} USDC, operation ${op.id}: ${seen.join(' → ')} in ${((Date.now() - t0) / 1000).toFixed(1)} s (${op.transactions.map((t) => t.type).join(', then ')})`,
  );
  console.log(`  position after:  ${positionLine(await position())}`);
  // The supply's record holds the wallet on the chain until it is final (two blocks after "confirmed"): the transfer
  // printed below is then accepted at once.
  while (op.transactions.some((t) => t.status !== 'confirmed')) {
    if (Date.now() - t0 > 120_000) throw new Error("the demo's deposit transactions are not final after 120 s");
    await new Promise((r) => setTimeout(r, 250));
    op = await json<Operation>(`${yieldBase}/operations/${op.id}`, { headers: partner });
  }

  const k = key['secretKey']!;
  const hookUrl = 'https://localhost:9443/hooks';
  const hookBody = JSON.stringify({ url: hookUrl, events: ['wallet.created', 'rest.transaction.confirmed'] });
  console.log(`
The service is up on ${url} with two local chains (EVM chain 11155111 on anvil, SOLANA_DEVNET on the LiteSVM façade).
Project ${project.id} (${project.name}, plan ${project.plan}, ${project.rateLimitPerMinute} requests a minute per key)
API key ${key.id} (development), secret: ${k}
Admin API ${adminUrl}, token: ${adminToken} (given to the service as ADMIN_TOKEN: no token file is written)
EVM wallet ${evm.id} (${evm.address}) holds 10 ETH and 750 USDC; Solana wallet ${sol.id} (${sol.address}) holds 5 SOL.

Send 0.001 ETH, then follow the record to "confirmed" (a block a second, final two blocks later):
  curl -s -X POST ${url}/v1/wallets/${evm.id}/transfer -H 'x-api-key: ${k}' -H 'content-type: application/json' \\
    -d '{"to":"0x000000000000000000000000000000000000bEEF","value":"1000000000000000","chainId":"${SEPOLIA_CHAIN_ID}"}'
  curl -s ${url}/v1/wallets/${evm.id}/transactions -H 'x-api-key: ${k}'

Yield on the local lending protocol: the position, a withdrawal of everything, then that operation (one payment at
a time per wallet and chain: a withdrawal sent while the transfer above is not final answers 409, retry it):
  curl -s '${yieldBase}/position?chainId=${SEPOLIA_CHAIN_ID}' -H 'x-api-key: ${k}'
  curl -s -X POST ${yieldBase}/withdrawals -H 'x-api-key: ${k}' -H 'idempotency-key: demo-withdrawal-1' \\
    -H 'content-type: application/json' -d '{"chainId":${SEPOLIA_CHAIN_ID},"amount":"all"}'
  curl -s ${yieldBase}/operations/<id from the answer> -H 'x-api-key: ${k}'

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
