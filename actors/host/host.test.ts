import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { initialTransition, transition } from 'xstate';
import { createStore, type Store } from '../../store/index.ts';
import { boom, type CounterContext, counterDefinition } from '../../test/helpers/actor-machines.ts';
import { type KeyMaterial, type WalletInput, walletMachine } from '../wallet/wallet.machine.ts';
import { createWalletDefinition } from '../wallet/wallet-definition.ts';
import { type ActorHost, createActorHost } from './host.ts';
import type { ActorView, AnyMachineDefinition, Clock, HostOptions } from './types.ts';

function tempStore(): { store: Store; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-host-'));
  const file = path.join(dir, 'service.db');
  return { store: createStore(file), file };
}

const quiet = () => undefined;

/** The definitions each host was created with, by name: the tests spawn and wait by machine name. */
const definitionsOf = new WeakMap<ActorHost, Map<string, AnyMachineDefinition>>();

function hostOn(store: Store, o: Partial<HostOptions> & Pick<HostOptions, 'definitions'>) {
  return track(createActorHost({ store: store.actors, log: quiet, retryBaseMs: 5, ...o }), o.definitions);
}

function track(host: ActorHost, definitions: AnyMachineDefinition[]): ActorHost {
  definitionsOf.set(host, new Map(definitions.map((d) => [d.name, d])));
  return host;
}

function spawnIn(host: ActorHost, machine: string, id: string, admission: unknown) {
  return host.spawn(definitionsOf.get(host)!.get(machine)!, id, admission as never);
}

/** `waitFor` with the definition of the machine the actor runs. */
function waitIn(host: ActorHost, id: string, predicate: (v: ActorView) => boolean): Promise<ActorView> {
  const machine = host.read(id)?.machine ?? 'counter';
  return host.waitFor(definitionsOf.get(host)!.get(machine)!, id, predicate) as Promise<ActorView>;
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
    custody: 'managed',
  };
}

const ctxOf = (v: { context: Record<string, unknown> }) => v.context as unknown as CounterContext;
const row = (store: Store, id: string) => store.actors.get(id)!;
const never = <T>() => new Promise<T>(() => undefined);

test('wallet machine: run, store as {value, context}, JSON, restore, continue', () => {
  const [s0, actions] = initialTransition(walletMachine, walletInput('w1'));
  assert.equal(s0.value, 'creating');
  assert.deepEqual(
    actions.filter((a) => a.type === 'xstate.spawnChild').map((a) => (a.params as { src: string }).src),
    ['generateKey'],
  );
  const stored = JSON.parse(JSON.stringify({ value: s0.value, context: s0.context }));
  const restored = walletMachine.resolveState(stored);
  const [s1] = transition(walletMachine, restored, {
    type: 'xstate.done.actor.0.wallet.creating',
    output: { publicKey: 'pk', address: '0xabc' },
    actorId: '0.wallet.creating',
  } as never);
  assert.equal(s1.value, 'ready');
  assert.equal(s1.status, 'done');
  assert.equal(s1.context.address, '0xabc');
  assert.equal(s1.context.custody, 'managed');
});

test('effects run only after the state that asked for them is committed', async () => {
  const { store, file } = tempStore();
  const reader = new Database(file, { readonly: true });
  const seen: Array<{ state: string | undefined; effectRows: number }> = [];
  const host = hostOn(store, {
    definitions: [
      counterDefinition({
        bump: async (_input, ctx) => {
          // What another connection sees at the moment the effect starts: only committed data.
          const r = reader.prepare('select state from actor_snapshots where actor_id = ?').get(ctx.actorId) as
            | { state: string }
            | undefined;
          const n = reader.prepare('select count(*) as n from actor_effects where key = ?').get(ctx.key) as {
            n: number;
          };
          seen.push({ state: r?.state, effectRows: n.n });
          return 1;
        },
      }),
    ],
  });
  await spawnIn(host, 'counter', 'c1', undefined);
  for (let i = 0; i < 5; i++) {
    await host.deliver('c1', { type: 'EFFECT' });
    await waitIn(host, 'c1', (v) => v.value === 'idle' && ctxOf(v).effects === i + 1);
  }
  assert.equal(seen.length, 5);
  for (const s of seen) assert.deepEqual(s, { state: 'working', effectRows: 1 });
  // Applying the outcome removed the intent in the same transaction.
  assert.equal(store.actors.effectsOf('c1').length, 0);
  await host.stop();
  reader.close();
  store.close();
});

test('a restart re-runs an at-least-once effect with the same key; the wallet becomes ready', async () => {
  const { store, file } = tempStore();
  seedProject(store);
  const firstKeys: string[] = [];
  const hang = hostOn(store, {
    definitions: [
      {
        ...createWalletDefinition({ ...store, generateKey: () => never<KeyMaterial>() }),
        effects: {
          generateKey: {
            run: (_i, ctx) => {
              firstKeys.push(ctx.key);
              assert.equal(ctx.redelivered, false, 'a first run is not a re-delivery');
              return never();
            },
          },
        },
      },
    ],
  });
  const input = walletInput('w2');
  await spawnIn(hang, 'wallet', 'w2', { ...input, userIdentifierType: 'CUSTOM_ID' });
  assert.equal(store.wallets.getAny('w2')?.status, 'creating');
  assert.equal(row(store, 'w2').machineVersion, 2);
  assert.equal(store.actors.effectsOf('w2').length, 1);
  await hang.stop();
  store.close();

  const reopened = createStore(file);
  const calls: Array<{ walletId: string; key: string }> = [];
  const host = hostOn(reopened, {
    definitions: [
      {
        ...createWalletDefinition({ ...reopened, generateKey: never }),
        effects: {
          generateKey: {
            run: async (i: WalletInput, ctx) => {
              calls.push({ walletId: i.walletId, key: ctx.key });
              // Found stored at load: the run it repeats may have done part of it.
              assert.equal(ctx.redelivered, true);
              return { publicKey: '04ab', address: '0x00000000000000000000000000000000000000aa' };
            },
          },
        },
      },
    ],
  });
  await host.start();
  assert.equal(host.restored, true);
  const final = await waitIn(host, 'w2', (s) => s.status !== 'active');
  assert.equal(final.value, 'ready');
  assert.deepEqual(calls, [{ walletId: 'w2', key: firstKeys[0] }]);
  assert.equal(reopened.wallets.getAny('w2')?.status, 'ready');
  assert.equal(row(reopened, 'w2').done, 1);
  assert.equal(reopened.actors.effectsOf('w2').length, 0);
  assert.equal(reopened.outbox.oldest(10).length, 1);
  await host.stop();
  reopened.close();
});

test('a graceful stop waits for a signature under way and commits it; new work is refused meanwhile', async () => {
  const { store, file } = tempStore();
  let finish: (sig: string) => void = () => undefined;
  const first = hostOn(store, {
    definitions: [counterDefinition({ sign: () => new Promise<string>((res) => (finish = res)) })],
  });
  await spawnIn(first, 'counter', 'g1', undefined);
  await first.deliver('g1', { type: 'SIGN' });
  await new Promise((r) => setImmediate(r));
  const stopping = first.stop();
  await assert.rejects(first.deliver('g1', { type: 'ADD', id: 'late' }), { code: 'SERVICE_STOPPING' });
  setTimeout(() => finish('sig'), 100);
  await stopping;
  assert.equal(row(store, 'g1').state, 'idle', 'the signature reached the stored state before the stop ended');
  store.close();

  const reopened = createStore(file);
  const second = hostOn(reopened, { definitions: [counterDefinition()] });
  await second.start();
  const v = second.read('g1')!;
  assert.equal(ctxOf(v).signed, 1);
  assert.equal(ctxOf(v).error, null, 'not reported interrupted');
  await second.stop();
  reopened.close();
});

test('an at-most-once effect interrupted by a restart is never run again: the machine hears EFFECT_INTERRUPTED', async () => {
  const { store, file } = tempStore();
  let signs = 0;
  const first = hostOn(store, {
    // A signature that never comes: the stop gives up waiting for it.
    stopDrainMs: 50,
    definitions: [
      counterDefinition({
        sign: () => {
          signs++;
          return never();
        },
      }),
    ],
  });
  await spawnIn(first, 'counter', 's1', undefined);
  await first.deliver('s1', { type: 'SIGN' });
  await new Promise((r) => setImmediate(r));
  assert.equal(signs, 1);
  await first.stop();
  store.close();

  const reopened = createStore(file);
  const second = hostOn(reopened, {
    definitions: [
      counterDefinition({
        sign: async () => {
          signs++;
          return 'sig';
        },
      }),
    ],
  });
  await second.start();
  const v = await waitIn(second, 's1', (x) => x.value !== 'signing');
  assert.equal(v.value, 'uncertain');
  assert.equal(ctxOf(v).error?.code, 'EFFECT_INTERRUPTED');
  assert.equal(signs, 1, 'the signing effect did not run again');
  assert.equal(reopened.actors.effectsOf('s1').length, 0);
  await second.stop();
  reopened.close();
});

test('deliver: order kept, duplicate ids ignored, resolves after commit, reaches actors not in memory', async () => {
  const { store } = tempStore();
  const host = hostOn(store, { definitions: [counterDefinition()] });
  await spawnIn(host, 'counter', 'd1', undefined);
  // A waiting actor leaves memory once its step is committed.
  assert.equal(host.isLive('d1'), false);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => host.deliver('d1', { type: 'ADD', id: `e${i}` }, { id: `e${i}` })),
  );
  assert.ok(results.every((r) => r.outcome === 'applied'));
  const stored = JSON.parse(row(store, 'd1').snapshot);
  assert.deepEqual(
    stored.context.applied,
    Array.from({ length: 20 }, (_, i) => `e${i}`),
  );
  const again = await host.deliver('d1', { type: 'ADD', id: 'e3' }, { id: 'e3' });
  assert.equal(again.outcome, 'duplicate');
  assert.equal(ctxOf(host.read('d1')!).applied.length, 20);
  await assert.rejects(host.deliver('nobody', { type: 'ADD', id: 'x' }), { code: 'ACTOR_NOT_FOUND' });
  await host.deliver('d1', { type: 'FINISH' });
  const late = await host.deliver('d1', { type: 'ADD', id: 'late' }, { id: 'late' });
  assert.equal(late.outcome, 'final');
  // A finished actor keeps no inbox rows or intents.
  const inbox = store.sqlite.prepare("select count(*) as n from actor_inbox where actor_id = 'd1'").get() as {
    n: number;
  };
  assert.equal(inbox.n, 0);
  await host.stop();
  store.close();
});

test('the scheduler wakes stored actors from the database, also after a restart and when overdue', async () => {
  const { store, file } = tempStore();
  const first = hostOn(store, { definitions: [counterDefinition()] });
  await first.start();
  const soon = Date.now() + 100;
  await spawnIn(first, 'counter', 't1', { wakeAt: soon });
  await spawnIn(first, 'counter', 't2', { wakeAt: Date.now() + 60_000 });
  assert.equal(row(store, 't1').wakeAt, soon);
  assert.equal(first.liveCount(), 0, 'actors that only wait are not kept in memory');
  await first.stop();
  store.close();
  await new Promise((r) => setTimeout(r, 150));

  const reopened = createStore(file);
  const lags: number[] = [];
  const second = hostOn(reopened, { definitions: [counterDefinition()], onWakeLag: (ms) => lags.push(ms) });
  await second.start();
  const woken = await waitIn(second, 't1', (v) => ctxOf(v).wakes === 1);
  assert.equal(woken.value, 'idle');
  assert.equal(row(reopened, 't1').wakeAt, null);
  assert.equal(lags.length, 1);
  assert.ok(lags[0]! >= 0);
  assert.equal(ctxOf(second.read('t2')!).wakes, 0);
  await second.stop();
  reopened.close();
});

/** A clock the test moves by hand: timers fire when `advance` passes them. */
function manualClock(start: number): Clock & { advance(ms: number): void; armed(): number[] } {
  let now = start;
  let next = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimer(fn, ms) {
      const id = next++;
      timers.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimer(h) {
      timers.delete(h as number);
    },
    advance(ms) {
      now += ms;
      for (const [id, t] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at <= now) {
          timers.delete(id);
          t.fn();
        }
      }
    },
    armed: () => [...timers.values()].map((t) => t.at - now),
  };
}

test('a wake time beyond 2^31-1 ms is re-armed, not fired early', async () => {
  const { store } = tempStore();
  const t0 = Date.parse('2026-11-23T00:00:00Z');
  const clock = manualClock(t0);
  const host = hostOn(store, { definitions: [counterDefinition()], clock });
  await host.start();
  const far = t0 + 2 ** 31 + 5_000;
  await spawnIn(host, 'counter', 'far', { wakeAt: far });
  await new Promise((r) => setImmediate(r));
  assert.ok(clock.armed().includes(2 ** 31 - 1), `armed ${clock.armed()}`);
  clock.advance(2 ** 31 - 1);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(ctxOf(host.read('far')!).wakes, 0, 'not due yet: no WAKE');
  // Re-armed for the rest (less the lead at which the actors due are loaded ahead of their time).
  assert.ok(clock.armed().includes(far - clock.now() - 100), `re-armed for the rest: ${clock.armed()}`);
  clock.advance(far - clock.now() - 100);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(host.isLive('far'), true, 'loaded ahead of its wake time');
  assert.equal(ctxOf(host.read('far')!).wakes, 0, 'and not woken before it');
  clock.advance(far - clock.now());
  const v = await waitIn(host, 'far', (x) => ctxOf(x).wakes === 1);
  assert.equal(v.value, 'idle');
  await host.stop();
  store.close();
});

test('a timer that fires a millisecond early does not send the actors loaded ahead out of memory', async () => {
  const { store } = tempStore();
  const t0 = Date.parse('2026-11-23T00:00:00Z');
  const clock = manualClock(t0);
  // Timers round to the millisecond: this one runs each callback 1 ms before its time.
  const early: Clock = { ...clock, setTimer: (fn, ms) => clock.setTimer(fn, Math.max(0, ms - 1)) };
  const host = hostOn(store, { definitions: [counterDefinition()], clock: early });
  await host.start();
  await spawnIn(host, 'counter', 'due', { wakeAt: t0 + 1_000 });
  await new Promise((r) => setImmediate(r));
  clock.advance(900);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(host.isLive('due'), true, 'loaded ahead of its wake time');
  clock.advance(99);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(clock.now(), t0 + 999);
  assert.equal(host.isLive('due'), true, 'still in memory after the early timer');
  assert.equal(ctxOf(host.read('due')!).wakes, 0, 'and not woken before its time');
  clock.advance(1);
  const v = await waitIn(host, 'due', (x) => ctxOf(x).wakes === 1);
  assert.equal(v.value, 'idle');
  await host.stop();
  store.close();
});

test('a WAKE computed ahead of its time is not used once an event changed the actor first', async () => {
  const { store } = tempStore();
  const t0 = Date.parse('2026-11-23T00:00:00Z');
  const clock = manualClock(t0);
  const host = hostOn(store, { definitions: [counterDefinition()], clock });
  await host.start();
  await spawnIn(host, 'counter', 'soon', { wakeAt: t0 + 1_000 });
  await new Promise((r) => setImmediate(r));
  // 100 ms ahead: loaded, and its WAKE transition computed from the state it has now.
  clock.advance(900);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(host.isLive('soon'), true, 'loaded ahead of its wake time');
  // An event applied before the wake time changes that state: the WAKE must apply to the new one. (Waiting on the
  // actor keeps it in memory between the two, as a busy actor would be.)
  const woken = waitIn(host, 'soon', (x) => ctxOf(x).wakes === 1);
  const r = await host.deliver('soon', { type: 'ADD', id: 'before-the-wake' }, { id: 'e1' });
  assert.equal(r.outcome, 'applied');
  assert.equal(host.isLive('soon'), true);
  clock.advance(100);
  const v = await woken;
  assert.deepEqual(ctxOf(v).applied, ['before-the-wake'], 'the event applied before the WAKE is kept');
  assert.equal(v.value, 'idle');
  await host.stop();
  store.close();
});

test('a stop while actors are being woken leaves no timer armed', async () => {
  const { store } = tempStore();
  const t0 = Date.parse('2026-11-23T00:00:00Z');
  const clock = manualClock(t0);
  const host = hostOn(store, { definitions: [counterDefinition()], clock });
  await host.start();
  await spawnIn(host, 'counter', 'now', { wakeAt: t0 + 1_000 });
  await spawnIn(host, 'counter', 'later', { wakeAt: t0 + 3_600_000 });
  await new Promise((r) => setImmediate(r));
  // Loaded 100 ms ahead, then woken at its time.
  clock.advance(900);
  await new Promise((r) => setTimeout(r, 20));
  clock.advance(100);
  // The wake of `now` is being written when the stop begins; once it commits, the scheduler looks for the next wake
  // time (`later`) while the host drains. Armed then, its timer would outlive the stop: it would keep the process
  // alive for an hour, then fire into a stopped host.
  await host.stop();
  assert.deepEqual(clock.armed(), [], 'no timer armed after the stop');
  store.close();
});

test('migration: committed v1 wallet rows (XState format) are migrated when loaded and finish', async () => {
  const { store } = tempStore();
  store.projects.insert({
    id: '0b6a3d8e-5f7c-4e21-9a3b-2c1d0e9f8a7b',
    name: 'p',
    plan: 'free',
    createdAt: '2026-11-20T10:00:00.000Z',
  });
  const fixtures = [
    ...JSON.parse(
      fs.readFileSync(path.join(import.meta.dirname, '../../fixtures/actors/wallet-v1-creating.json'), 'utf8'),
    ),
    ...JSON.parse(
      fs.readFileSync(path.join(import.meta.dirname, '../../fixtures/actors/wallet-v1-ready.json'), 'utf8'),
    ),
  ] as Array<Record<string, unknown>>;
  const insert = store.sqlite.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, done, wake_at, updated_at)
     values (@actorId, @machine, @machineVersion, @snapshot, @done, @wakeAt, @updatedAt)`,
  );
  let seq = 1;
  for (const f of fixtures) {
    insert.run(f);
    const ctx = JSON.parse(f['snapshot'] as string).context;
    store.wallets.insert({
      id: f['actorId'] as string,
      projectId: ctx.projectId,
      type: ctx.type,
      scheme: ctx.scheme,
      status: f['done'] ? 'ready' : 'creating',
      custody: ctx.custody ?? 'managed',
      cosmosPrefix: ctx.cosmosPrefix,
      userIdentifier: ctx.userIdentifier,
      userIdentifierType: 'CUSTOM_ID',
      createdAt: ctx.createdAt,
      updatedAt: ctx.createdAt,
      seq: seq++,
    });
  }
  const calls: WalletInput[] = [];
  const host = hostOn(store, {
    definitions: [
      createWalletDefinition({
        ...store,
        generateKey: async (i) => {
          calls.push(i);
          return { publicKey: '04cd', address: `addr-${i.walletId.slice(0, 4)}` };
        },
      }),
    ],
  });
  host.checkStoredVersions();
  await host.start();
  const creating = fixtures.filter((f) => !f['done']).map((f) => f['actorId'] as string);
  for (const id of creating) {
    const v = await waitIn(host, id, (s) => s.status !== 'active');
    assert.equal(v.value, 'ready', id);
    assert.equal(row(store, id).machineVersion, 2);
    assert.equal(store.wallets.getAny(id)?.status, 'ready');
  }
  assert.deepEqual(calls.map((c) => c.custody).sort(), ['managed', 'managed', 'pregen']);
  assert.equal(calls.find((c) => c.type === 'COSMOS')?.cosmosPrefix, 'osmo');
  // A finished v1 row is never run, but still reads in the current version's shape.
  const ready = host.read('9c4f5e0d-6071-4283-bdc4-e5f607182934')!;
  assert.equal(ready.status, 'done');
  assert.equal(ready.context['custody'], 'managed');
  await host.stop();
  store.close();
});

test('effects a migration carries over keep their delivery rule: a signing in flight is interrupted, never run', async () => {
  const { store } = tempStore();
  const insert = store.sqlite.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, updated_at) values (?, 'counter', 1, ?, 'x')`,
  );
  const base = { applied: [], effects: 0, signed: 0, wakes: 0, wakeAt: null, error: null };
  // v1 kept in-flight effects inside its snapshot: one row was signing, one was bumping.
  insert.run('was-signing', JSON.stringify({ value: 'signing', context: base, inFlight: 'sign' }));
  insert.run('was-working', JSON.stringify({ value: 'working', context: base, inFlight: 'bump' }));
  const runs = { sign: 0, bump: 0 };
  const host = hostOn(store, {
    definitions: [
      counterDefinition(
        {
          sign: async () => {
            runs.sign++;
            return 'sig';
          },
          bump: async () => {
            runs.bump++;
            return 1;
          },
        },
        {
          version: 2,
          migrations: [
            {
              from: 1,
              up(stored) {
                const s = stored as { value: string; context: Record<string, unknown>; inFlight: string };
                const invokeId = `0.counter.${s.value}`;
                return {
                  value: s.value,
                  context: s.context,
                  effects: [{ invokeId, src: s.inFlight, input: { n: 0 } }],
                };
              },
            },
          ],
        },
      ),
    ],
  });
  host.checkStoredVersions();
  await host.start();
  const signing = await waitIn(host, 'was-signing', (v) => v.value !== 'signing');
  assert.equal(signing.value, 'uncertain');
  assert.equal(ctxOf(signing).error?.code, 'EFFECT_INTERRUPTED');
  const working = await waitIn(host, 'was-working', (v) => v.value !== 'working');
  assert.equal(working.value, 'idle');
  assert.equal(ctxOf(working).effects, 1);
  assert.deepEqual(runs, { sign: 0, bump: 1 });
  assert.equal(row(store, 'was-signing').machineVersion, 2);
  await host.stop();
  store.close();
});

test('a stored actor newer than the code, or of an unknown machine, refuses the start by name', () => {
  const { store } = tempStore();
  const insert = store.sqlite.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, updated_at) values (?, ?, ?, ?, 'x')`,
  );
  insert.run('future-1', 'counter', 3, '{"value":"idle","context":{}}');
  const host = hostOn(store, { definitions: [counterDefinition()] });
  assert.throws(() => host.checkStoredVersions(), /counter.*future-1.*v3.*newer than this code's v1/s);
  store.sqlite.prepare("update actor_snapshots set machine = 'payment', machine_version = 1").run();
  assert.throws(() => host.checkStoredVersions(), /no machine named payment/);
  store.close();
});

test('a failed save: waiters reject, the actor is reloaded from its committed state and its effect re-run', async () => {
  const { store } = tempStore();
  let failNext = false;
  const failing = {
    ...store.actors,
    transact<T>(fn: () => T, o?: { bounded?: boolean }): Promise<T> {
      if (failNext) {
        failNext = false;
        return Promise.reject(Object.assign(new Error('disk full'), { code: 'STORE_SYNC_FAILED', httpStatus: 503 }));
      }
      return store.actors.transact(fn, o);
    },
  };
  let bumps = 0;
  let release: (() => void) | undefined;
  const definitions = [
    counterDefinition({
      bump: () => {
        bumps++;
        return new Promise((r) => {
          release = () => r(1);
        });
      },
    }),
  ];
  const host = createActorHost({
    store: failing,
    log: quiet,
    retryBaseMs: 5,
    definitions,
  });
  track(host, definitions);
  await spawnIn(host, 'counter', 'f1', undefined);
  await host.deliver('f1', { type: 'EFFECT' });
  const waiting = waitIn(host, 'f1', (v) => ctxOf(v).effects === 1);
  // The ADD's step fails to save: the waiter and the sender hear it; nothing hangs.
  failNext = true;
  const extra = host.deliver('f1', { type: 'ADD', id: 'during' }, { id: 'during' });
  const outcome = await Promise.allSettled([extra, waiting]);
  assert.deepEqual(
    outcome.map((o) => o.status),
    ['rejected', 'rejected'],
  );
  assert.equal(host.isLive('f1'), false);
  release?.();
  // Reloaded from the store: the effect intent is still there, so it runs again (at least once), then completes.
  const v = await (async () => {
    for (let i = 0; i < 200; i++) {
      const r = host.read('f1')!;
      if (ctxOf(r).effects === 1) return r;
      release?.();
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error('the actor was not reloaded');
  })();
  assert.equal(v.value, 'idle');
  assert.equal(bumps, 2);
  assert.deepEqual(ctxOf(v).applied, [], 'the event whose save failed was not applied');
  await host.stop();
  store.close();
});

test('a step that keeps throwing ends faulted: events are stored, the operator retries or abandons', async () => {
  const { store } = tempStore();
  boom.armed = true;
  const host = hostOn(store, { definitions: [counterDefinition()], maxStepFailures: 3 });
  await spawnIn(host, 'counter', 'b1', undefined);
  await spawnIn(host, 'counter', 'b2', undefined);
  const waiter = waitIn(host, 'b1', () => false);
  const failing = host.deliver('b1', { type: 'BOOM' }, { id: 'boom-1' });
  const queued = host.deliver('b1', { type: 'ADD', id: 'after' }, { id: 'after' });
  assert.equal((await failing).outcome, 'stored');
  assert.equal((await queued).outcome, 'stored');
  await assert.rejects(waiter, { code: 'ACTOR_FAULTED' });
  assert.ok(row(store, 'b1').faultedAt);
  assert.match(row(store, 'b1').faultReason ?? '', /boom/);
  assert.equal(host.isLive('b1'), false);
  // Still faulted: new events are stored too, in order.
  assert.equal((await host.deliver('b1', { type: 'ADD', id: 'later' }, { id: 'later' })).outcome, 'stored');
  assert.equal(host.read('b1')!.status, 'faulted');
  assert.deepEqual(
    store.actors.pendingEventsOf('b1').map((p) => p.eventId),
    ['boom-1', 'after', 'later'],
  );

  // The operator fixed the cause and retries: the stored events apply in order.
  boom.armed = false;
  await host.retry('b1');
  const v = await waitIn(host, 'b1', (x) => ctxOf(x).applied.length === 2);
  assert.deepEqual(ctxOf(v).applied, ['after', 'later']);
  assert.equal(row(store, 'b1').faultedAt, null);

  // b2 faults too and is abandoned: done, never run again.
  boom.armed = true;
  assert.equal((await host.deliver('b2', { type: 'BOOM' })).outcome, 'stored');
  assert.equal(await host.abandon('b2'), true);
  assert.equal(row(store, 'b2').done, 1);
  assert.ok(row(store, 'b2').abandonedAt);
  assert.equal((await host.deliver('b2', { type: 'ADD', id: 'x' })).outcome, 'final');
  assert.equal(await host.abandon('b1'), false, 'only a faulted actor can be abandoned');
  boom.armed = false;
  await host.stop();
  store.close();
});

test('machines that need a live XState runtime are refused (delays do not survive a restart)', async () => {
  const { store } = tempStore();
  const { setup } = await import('xstate');
  const delayed = setup({}).createMachine({
    id: 'delayed',
    initial: 'a',
    states: { a: { after: { 1000: 'b' } }, b: {} },
  });
  const host = hostOn(store, {
    definitions: [{ name: 'delayed', version: 1, machine: delayed, effects: {}, persist: () => undefined }],
  });
  await assert.rejects(spawnIn(host, 'delayed', 'x1', undefined), /would not survive a restart/);
  assert.equal(store.actors.get('x1'), undefined);
  await host.stop();
  store.close();
});

test('back-pressure: past the live bound new work is refused with a transient 503, nothing stored', async () => {
  const { store } = tempStore();
  const host = hostOn(store, { definitions: [counterDefinition({ bump: never })], maxLive: 2 });
  for (const id of ['p1', 'p2']) {
    await spawnIn(host, 'counter', id, undefined);
    await host.deliver(id, { type: 'EFFECT' });
  }
  assert.equal(host.liveCount(), 2);
  await assert.rejects(spawnIn(host, 'counter', 'p3', undefined), {
    code: 'SERVICE_BUSY',
    httpStatus: 503,
    transient: true,
  });
  assert.equal(store.actors.get('p3'), undefined);
  await host.stop();
  store.close();
});

test('start recovers actors with effects under way in pages, below the live bound, and then says restored', async () => {
  const { store, file } = tempStore();
  const first = hostOn(store, { definitions: [counterDefinition({ bump: never })] });
  for (let i = 0; i < 40; i++) {
    await spawnIn(first, 'counter', `r${String(i).padStart(2, '0')}`, undefined);
    await first.deliver(`r${String(i).padStart(2, '0')}`, { type: 'EFFECT' });
  }
  await first.stop();
  store.close();
  const reopened = createStore(file);
  let concurrent = 0;
  let peak = 0;
  const host = hostOn(reopened, {
    maxLive: 10,
    definitions: [
      counterDefinition({
        bump: async () => {
          concurrent++;
          peak = Math.max(peak, concurrent);
          await new Promise((r) => setTimeout(r, 2));
          concurrent--;
          return 1;
        },
      }),
    ],
  });
  assert.equal(host.restored, false);
  await host.start();
  assert.equal(host.restored, true);
  for (let i = 0; i < 40; i++) {
    await waitIn(host, `r${String(i).padStart(2, '0')}`, (v) => ctxOf(v).effects === 1);
  }
  assert.ok(peak <= 8, `at most the watermark at once (peak ${peak})`);
  assert.equal(reopened.actors.counts().faulted, 0);
  await host.stop();
  reopened.close();
});

test('spawn and waitFor are typed by the definition: its admission in, its view out (typecheck holds the negative cases)', async () => {
  const { store } = tempStore();
  const counter = counterDefinition();
  const host = hostOn(store, { definitions: [counter] });
  // The counter's admission is its input; a wrong one does not compile (never called: the types are the check).
  // @ts-expect-error wakeAt is a number
  const wrongAdmission = () => host.spawn(counter, 'typed-0', { wakeAt: 'soon' });
  assert.equal(typeof wrongAdmission, 'function');
  await host.spawn(counter, 'typed-1', { wakeAt: Date.now() + 60_000 });
  // The view's context is the machine's, without a cast.
  const v = await host.waitFor(counter, 'typed-1', (x) => x.context.wakeAt !== null);
  assert.equal(v.value, 'sleeping');
  // @ts-expect-error the counter's context has no such field
  assert.equal(v.context.address, undefined);
  // A definition the host was not created with is refused, even under a registered name.
  await assert.rejects(host.spawn(counterDefinition(), 'typed-2', {}), /not one this host was created with/);
  await host.stop();
  store.close();
});
