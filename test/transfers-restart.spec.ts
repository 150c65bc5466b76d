/**
 * A restart with payments in every status: what the chain did while the service was down decides each record once
 * the service is back (monitoring resumes from the database), and a transaction the node forgot is sent again with
 * exactly the stored bytes.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { dropTransaction, mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { startTestService, type TestService, tempDataDir } from './helpers/service.ts';

const RECIPIENT = '0x000000000000000000000000000000000000bEEF';
let anvil: Anvil | undefined;
let svc: TestService | undefined;

after(async () => {
  await svc?.stop();
  await anvil?.stop();
});

test('payments in every status survive a restart and end in the status the chain shows', async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  const rpcUrl = anvil.rpcUrl;
  const dir = tempDataDir('wcs-chains-');
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl, environment: 'any' }] }));
  const env = { CHAINS_FILE: chainsFile, CHAIN_POLL_INTERVAL_MS: '100' };
  svc = await startTestService(env);
  const partner = await svc.newPartner();
  const wallet = async (name: string, fund: boolean) => {
    const r = await svc!.v1(partner.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: name,
      userIdentifierType: 'CUSTOM_ID',
    });
    if (fund) await setBalance(rpcUrl, r.body.address, 10n ** 18n);
    return r.body.id as string;
  };
  const send = (walletId: string) =>
    svc!.v1(partner.secret, 'POST', `/wallets/${walletId}/transfer`, { to: RECIPIENT, value: '7', chainId: '31337' });
  const status = async (walletId: string, id: string) =>
    (await svc!.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${id}`)).body;

  // confirmed before the restart
  const confirmedWallet = await wallet('confirmed', true);
  const confirmed = await send(confirmedWallet);
  for (
    let i = 0;
    i < 100 && (await status(confirmedWallet, confirmed.body.transactionId)).status !== 'confirmed';
    i++
  ) {
    await mine(rpcUrl, 1);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal((await status(confirmedWallet, confirmed.body.transactionId)).status, 'confirmed');
  // failed before the restart
  const failedWallet = await wallet('failed', false);
  const failed = await send(failedWallet);
  assert.equal(failed.status, 400);
  // submitted, then mined while the service is down
  await setAutomine(rpcUrl, false);
  const minedWallet = await wallet('mined-while-down', true);
  const minedWhileDown = await send(minedWallet);
  assert.equal(minedWhileDown.body.status, 'submitted');
  // submitted, then forgotten by the node while the service is down
  const droppedWallet = await wallet('dropped-while-down', true);
  const dropped = await send(droppedWallet);
  assert.equal(dropped.body.status, 'submitted');

  const dataDir = svc.dataDir;
  await svc.stop({ keepData: true });
  svc = undefined;
  await dropTransaction(rpcUrl, dropped.body.txHash);
  await mine(rpcUrl, 4);
  assert.ok(await rpc(rpcUrl, 'eth_getTransactionReceipt', [minedWhileDown.body.txHash]), 'mined while down');
  assert.equal(await rpc(rpcUrl, 'eth_getTransactionByHash', [dropped.body.txHash]), null, 'the node forgot it');
  await setAutomine(rpcUrl, true);

  svc = await startTestService(env, { dataDir });
  fs.rmSync(dir, { recursive: true, force: true });
  // The record mined while the service was down is confirmed by the first polling rounds.
  const until = Date.now() + 30_000;
  while ((await status(minedWallet, minedWhileDown.body.transactionId)).status !== 'confirmed') {
    assert.ok(Date.now() < until, 'mined-while-down confirmed after the restart');
    await new Promise((r) => setTimeout(r, 50));
  }
  // The forgotten one is sent again (the same bytes, so the same hash) at its rebroadcast time, then confirmed.
  while ((await status(droppedWallet, dropped.body.transactionId)).status !== 'confirmed') {
    assert.ok(Date.now() < until, 'the dropped transaction was rebroadcast and confirmed');
    await mine(rpcUrl, 1);
    await new Promise((r) => setTimeout(r, 100));
  }
  const receipt = await rpc<{ transactionHash: string }>(rpcUrl, 'eth_getTransactionReceipt', [dropped.body.txHash]);
  assert.equal(receipt.transactionHash, dropped.body.txHash);
  assert.equal((await status(confirmedWallet, confirmed.body.transactionId)).status, 'confirmed');
  const failedRecord = await status(failedWallet, failed.body.transactionId);
  assert.deepEqual([failedRecord.status, failedRecord.failureStage], ['failed', 'broadcast']);
});
