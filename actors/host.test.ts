import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { assign, createActor, fromPromise, setup } from 'xstate';
import { createStore, type Store } from '../store/index.ts';
import { createActorHost, type MachineDefinition } from './host.ts';
import type { KeyMaterial, WalletInput } from './wallet.machine.ts';
import { walletMachine } from './wallet.machine.ts';
import { createWalletDefinition } from './wallet-definition.ts';

function tempStore(): { store: Store; file: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-host-'));
  const file = path.join(dir, 'service.db');
  return { store: createStore(file), file, dir };
}

function seedProject(store: Store) {
  store.projects.insert({ id: 'proj', name: 'p', plan: 'free', createdAt: new Date().toISOString() });
}

function walletInput(id: string): WalletInput {
  return {
    walletId: id,
    projectId: 'proj',
    type: 'EVM',
    scheme: 'DKLS',
    cosmosPrefix: null,
    userIdentifier: `user-${id}`,
    createdAt: new Date().toISOString(),
  };
}

function insertRow(store: Store, input: WalletInput) {
  return () =>
    store.wallets.insert({
      id: input.walletId,
      projectId: input.projectId,
      type: input.type,
      scheme: input.scheme,
      status: 'creating',
      userIdentifier: input.userIdentifier,
      userIdentifierType: 'CUSTOM_ID',
      createdAt: input.createdAt,
      updatedAt: input.createdAt,
      seq: store.wallets.nextSeq(),
    });
}

test('wallet machine: run, persist, JSON, restore, continue', async () => {
  // The pure machine with a fake key source that never answers: the snapshot stays in `creating`.
  const a = createActor(
    walletMachine.provide({
      actors: {
        generateKey: fromPromise(() => new Promise<KeyMaterial>(() => undefined)),
      },
    }),
    { input: walletInput('w1') },
  );
  a.start();
  assert.equal(a.getSnapshot().value, 'creating');
  const stored = JSON.parse(JSON.stringify(a.getPersistedSnapshot()));
  a.stop();

  const b = createActor(
    walletMachine.provide({
      actors: {
        generateKey: fromPromise(async () => ({ publicKey: 'pk', address: '0xabc' })),
      },
    }),
    { snapshot: stored, input: walletInput('w1') },
  );
  const done = new Promise((resolve) => b.subscribe((s) => s.status === 'done' && resolve(s)));
  b.start();
  await done;
  assert.equal(b.getSnapshot().value, 'ready');
  assert.equal(b.getSnapshot().context.address, '0xabc');
  assert.equal(b.getSnapshot().context.userIdentifier, 'user-w1');
});

test('host: snapshot and wallet row are stored together; a restart resumes a creating wallet', async () => {
  const { store, file, dir } = tempStore();
  seedProject(store);
  // First life: key generation never answers (the process "crashes" while the enclave works).
  const hang = createActorHost({
    writer: store.writer,
    snapshots: store.snapshots,
    definitions: [createWalletDefinition({ ...store, generateKey: () => new Promise<KeyMaterial>(() => undefined) })],
  });
  const input = walletInput('w2');
  await hang.spawn('wallet', 'w2', input, insertRow(store, input));
  assert.equal(store.wallets.getAny('w2')?.status, 'creating');
  const row = store.snapshots.get('w2')!;
  assert.equal(row.machine, 'wallet');
  assert.equal(row.machineVersion, 1);
  assert.equal(row.done, 0);
  await hang.stop();
  // Stopping the host is not an ending: the stored snapshot is still live.
  assert.equal(store.snapshots.get('w2')!.done, 0);
  store.close();

  // Second life on the same file: the actor is restored and asks for the key again.
  const reopened = createStore(file);
  const calls: string[] = [];
  const host = createActorHost({
    writer: reopened.writer,
    snapshots: reopened.snapshots,
    definitions: [
      createWalletDefinition({
        ...reopened,
        generateKey: async (i) => {
          calls.push(i.walletId);
          return { publicKey: '04ab', address: '0x00000000000000000000000000000000000000aa' };
        },
      }),
    ],
  });
  assert.equal(host.restoreAll(), 1);
  const final = await host.waitFor('w2', (s) => s.status !== 'active');
  assert.equal(final?.value, 'ready');
  assert.deepEqual(calls, ['w2']);
  const wallet = reopened.wallets.getAny('w2')!;
  assert.equal(wallet.status, 'ready');
  assert.equal(wallet.address, '0x00000000000000000000000000000000000000aa');
  assert.equal(reopened.snapshots.get('w2')!.done, 1);
  const events = reopened.outbox.pending(10);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.type, 'wallet.created');
  assert.equal(JSON.parse(events[0]!.data).walletAddress, wallet.address);
  assert.equal(host.liveCount(), 0);
  assert.equal(host.restoreAll(), 0);
  reopened.close();
  fs.rmSync(dir, { recursive: true });
});

test('host: a failed key generation aborts and removes the row; a duplicate initial write stores nothing', async () => {
  const { store, dir } = tempStore();
  seedProject(store);
  const host = createActorHost({
    writer: store.writer,
    snapshots: store.snapshots,
    definitions: [
      createWalletDefinition({
        ...store,
        generateKey: async () => {
          throw Object.assign(new Error('enclave down'), { code: 'ENCLAVE_UNAVAILABLE' });
        },
      }),
    ],
  });
  const input = walletInput('w3');
  await host.spawn('wallet', 'w3', input, insertRow(store, input));
  const final = await host.waitFor('w3', (s) => s.status !== 'active');
  assert.equal(final?.value, 'aborted');
  assert.deepEqual((final!.context as { error: unknown }).error, {
    code: 'ENCLAVE_UNAVAILABLE',
    message: 'enclave down',
  });
  assert.equal(store.wallets.getAny('w3'), undefined);

  const dupInput = { ...walletInput('w4'), userIdentifier: 'same' };
  const other = { ...walletInput('w5'), userIdentifier: 'same' };
  const never = createActorHost({
    writer: store.writer,
    snapshots: store.snapshots,
    definitions: [createWalletDefinition({ ...store, generateKey: () => new Promise<KeyMaterial>(() => undefined) })],
  });
  await never.spawn('wallet', 'w4', dupInput, insertRow(store, dupInput));
  await assert.rejects(never.spawn('wallet', 'w5', other, insertRow(store, other)), {
    code: 'SQLITE_CONSTRAINT_UNIQUE',
  });
  assert.equal(store.snapshots.get('w5'), undefined);
  assert.equal(never.isLive('w5'), false);
  await never.stop();
  await host.stop();
  store.close();
  fs.rmSync(dir, { recursive: true });
});

test('host: a stored wakeAt wakes the actor, also after a restart', async () => {
  const { store, file, dir } = tempStore();
  const timer = setup({
    types: {} as { context: { wakeAt: number; woke: number }; input: { wakeAt: number } },
  }).createMachine({
    id: 'timer',
    context: ({ input }) => ({ wakeAt: input.wakeAt, woke: 0 }),
    initial: 'waiting',
    states: {
      waiting: { on: { WAKE: { target: 'woken', actions: assign({ woke: ({ context }) => context.woke + 1 }) } } },
      woken: { type: 'final' },
    },
  });
  const def: MachineDefinition<typeof timer> = {
    name: 'timer',
    version: 1,
    machine: timer,
    persist: () => undefined,
    wakeAt: (s) => (s.matches('waiting') ? s.context.wakeAt : null),
  };
  const first = createActorHost({ writer: store.writer, snapshots: store.snapshots, definitions: [def] });
  const wakeAt = Date.now() + 300;
  await first.spawn('timer', 't1', { wakeAt });
  assert.equal(store.snapshots.get('t1')!.wakeAt, wakeAt);
  // The process goes down before the wake time and comes back after it.
  await first.stop();
  store.close();
  await new Promise((r) => setTimeout(r, 400));

  const reopened = createStore(file);
  const second = createActorHost({ writer: reopened.writer, snapshots: reopened.snapshots, definitions: [def] });
  assert.equal(second.restoreAll(), 1);
  const final = await second.waitFor('t1', (s) => s.status !== 'active');
  assert.equal(final?.value, 'woken');
  assert.equal((final!.context as { woke: number }).woke, 1);
  assert.equal(reopened.snapshots.get('t1')!.done, 1);
  assert.equal(reopened.snapshots.get('t1')!.wakeAt, null);
  reopened.close();
  fs.rmSync(dir, { recursive: true });
});

test('host: a live actor is woken at its wakeAt without a restart', async () => {
  const { store, dir } = tempStore();
  const timer = setup({ types: {} as { context: { wakeAt: number }; input: { wakeAt: number } } }).createMachine({
    id: 'timer',
    context: ({ input }) => ({ wakeAt: input.wakeAt }),
    initial: 'waiting',
    states: { waiting: { on: { WAKE: 'woken' } }, woken: { type: 'final' } },
  });
  const host = createActorHost({
    writer: store.writer,
    snapshots: store.snapshots,
    definitions: [
      {
        name: 'timer',
        version: 1,
        machine: timer,
        persist: () => undefined,
        wakeAt: (s) => (s.matches('waiting') ? s.context.wakeAt : null),
      } satisfies MachineDefinition<typeof timer>,
    ],
  });
  const started = Date.now();
  await host.spawn('timer', 't2', { wakeAt: started + 150 });
  const final = await host.waitFor('t2', (s) => s.status !== 'active');
  assert.equal(final?.value, 'woken');
  assert.ok(Date.now() - started >= 140, 'not woken before its time');
  assert.equal(store.snapshots.get('t2')!.done, 1);
  await host.stop();
  store.close();
  fs.rmSync(dir, { recursive: true });
});
