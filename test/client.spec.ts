/**
 * The typed client (client/) against the real service, as a partner would use it: create a wallet, sign a message
 * and verify it with viem, list, read an error envelope. Exercised on every run, so the client and the document it
 * is generated from cannot drift apart from what the service does.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { verifyMessage } from 'viem';
import { type CustodyClient, createCustodyClient } from '../client/src/index.ts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;
let custody: CustodyClient;

before(async () => {
  svc = await startTestService();
  const partner = await svc.newPartner();
  custody = createCustodyClient({ baseUrl: svc.url, apiKey: partner.secret });
});
after(async () => {
  await svc.stop();
});

test('create a wallet, sign a message, verify it with viem, find the wallet in the list', async () => {
  const created = await custody.POST('/v1/wallets', {
    body: { type: 'EVM', userIdentifier: 'client-user', userIdentifierType: 'CUSTOM_ID' },
  });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  const wallet = created.data!;
  assert.equal(wallet.status, 'ready');
  const signed = await custody.POST('/v1/wallets/{walletId}/sign-message', {
    params: { path: { walletId: wallet.id } },
    body: { message: 'hello from the typed client' },
  });
  assert.equal(signed.response.status, 200, JSON.stringify(signed.error));
  assert.equal(
    await verifyMessage({
      address: wallet.address as `0x${string}`,
      message: 'hello from the typed client',
      signature: `0x${signed.data!.signature}`,
    }),
    true,
  );
  const list = await custody.GET('/v1/wallets', { params: { query: { type: 'EVM', limit: '10' } } });
  assert.equal(list.response.status, 200);
  assert.ok(list.data!.data.some((w) => w.id === wallet.id));
  assert.equal(list.data!.pagination.limit, 10);
});

test('errors arrive as the typed envelope: code, message, requestId', async () => {
  const missing = await custody.GET('/v1/wallets/{walletId}', {
    params: { path: { walletId: '00000000-0000-4000-8000-000000000000' } },
  });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error?.code, 'WALLET_NOT_FOUND');
  assert.equal(typeof missing.error?.requestId, 'string');
  const bad = await custody.POST('/v1/wallets', {
    body: { type: 'EVM', userIdentifier: '', userIdentifierType: 'CUSTOM_ID' },
  });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.error?.code, 'INVALID_REQUEST');
  const noKey = createCustodyClient({ baseUrl: svc.url, apiKey: 'sk_dev_wrong' });
  const refused = await noKey.GET('/v1/wallets');
  assert.equal(refused.response.status, 403);
  assert.equal(refused.error?.code, 'INVALID_API_KEY');
});
