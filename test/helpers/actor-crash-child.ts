/**
 * The process the actor-host crash test SIGKILLs: the real host on a real SQLite file, running the counter
 * machine. Commands come as JSON lines on stdin (`spawn`, `deliver`, `stop`); each acknowledgement leaves on
 * stdout only once its promise resolved, i.e. once its effect is committed. Effects append to a journal file and
 * first check, through a second read-only connection, that the state which asked for them is committed; a
 * `VIOLATION` line in the journal means an effect ran ahead of its state.
 *
 * argv: <database file> <journal file>
 */
import fs from 'node:fs';
import readline from 'node:readline';
import Database from 'better-sqlite3';
import { createActorHost } from '../../actors/host/host.ts';
import { createStore } from '../../store/index.ts';
import { counterDefinition } from './actor-machines.ts';

const [dbFile, journalFile] = process.argv.slice(2) as [string, string];
const store = createStore(dbFile);
const reader = new Database(dbFile, { readonly: true });
const journal = fs.openSync(journalFile, 'a');
const stateOf = reader.prepare('select state from actor_snapshots where actor_id = ?').pluck();
const intentOf = reader.prepare('select count(*) from actor_effects where key = ?').pluck();

function effect(kind: 'bump' | 'sign', expectedState: string) {
  return async (_input: unknown, ctx: { actorId: string; key: string }) => {
    const state = stateOf.get(ctx.actorId);
    const intents = intentOf.get(ctx.key);
    if (state !== expectedState || intents !== 1) {
      fs.writeSync(journal, `VIOLATION ${kind} ${ctx.key} state=${String(state)} intents=${String(intents)}\n`);
    }
    fs.writeSync(journal, `${kind} ${ctx.key}\n`);
    // Long enough that kills often land while effects are under way.
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 15)));
    return 1;
  };
}

const counter = counterDefinition({ bump: effect('bump', 'working'), sign: effect('sign', 'signing') });
const host = createActorHost({
  store: store.actors,
  definitions: [counter],
  log: () => undefined,
  retryBaseMs: 5,
});
host.checkStoredVersions();
void host.start();

const out = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const cmd = JSON.parse(line) as
    | { op: 'spawn'; id: string }
    | { op: 'deliver'; actor: string; event: { type: string }; eventId: string }
    | { op: 'stop' };
  if (cmd.op === 'spawn') {
    host.spawn(counter, cmd.id, {}).then(
      () => out({ spawned: cmd.id }),
      (err) => out({ spawnFailed: cmd.id, code: (err as { code?: string }).code }),
    );
  } else if (cmd.op === 'deliver') {
    host.deliver(cmd.actor, cmd.event, { id: cmd.eventId }).then(
      (r) => out({ ack: cmd.eventId, outcome: r.outcome }),
      (err) => out({ nack: cmd.eventId, code: (err as { code?: string }).code }),
    );
  } else {
    void host.stop().then(() => {
      store.close();
      out({ stopped: true });
      process.exit(0);
    });
  }
});
out({ ready: true });
