/**
 * Test machines for the actor host: a counter with every kind of step the host must carry (external events, an
 * at-least-once effect, an at-most-once "signing" effect, a stored wake time, a final state), and a definition
 * factory whose effects the test provides.
 */
import { assign, fromPromise, setup } from 'xstate';
import type { EffectSpec, MachineDefinition } from '../../actors/host/types.ts';

export interface CounterContext {
  /** Ids of the ADD events applied, in order. */
  applied: string[];
  effects: number;
  signed: number;
  wakes: number;
  wakeAt: number | null;
  /** Set by a failed or interrupted signing. */
  error: { code: string; message: string } | null;
}

export type CounterEvent =
  | { type: 'ADD'; id: string }
  | { type: 'EFFECT' }
  | { type: 'SIGN' }
  | { type: 'SLEEP'; until: number }
  | { type: 'WAKE'; at: number }
  | { type: 'BOOM' }
  | { type: 'FINISH' };

/** When set, BOOM throws inside the machine (a failing step); tests clear it to let a retry through. */
export const boom = { armed: true };

export const counterMachine = setup({
  types: {} as { context: CounterContext; events: CounterEvent; input: { wakeAt?: number } | undefined },
  actors: {
    bump: fromPromise<number, { n: number }>(async () => 0),
    sign: fromPromise<string, { n: number }>(async () => ''),
  },
  guards: {
    interrupted: ({ event }) => (event as { error?: { code?: string } }).error?.code === 'EFFECT_INTERRUPTED',
  },
}).createMachine({
  id: 'counter',
  context: ({ input }) => ({
    applied: [],
    effects: 0,
    signed: 0,
    wakes: 0,
    wakeAt: input?.wakeAt ?? null,
    error: null,
  }),
  initial: 'idle',
  on: {
    ADD: { actions: assign({ applied: ({ context, event }) => [...context.applied, event.id] }) },
    BOOM: {
      actions: assign({
        effects: ({ context }) => {
          if (boom.armed) throw new Error('boom: this step always fails');
          return context.effects;
        },
      }),
    },
  },
  states: {
    idle: {
      always: { guard: ({ context }) => context.wakeAt !== null, target: 'sleeping' },
      on: {
        EFFECT: 'working',
        SIGN: 'signing',
        SLEEP: { target: 'sleeping', actions: assign({ wakeAt: ({ event }) => event.until }) },
        FINISH: 'finished',
      },
    },
    working: {
      invoke: {
        src: 'bump',
        input: ({ context }) => ({ n: context.effects }),
        onDone: { target: 'idle', actions: assign({ effects: ({ context }) => context.effects + 1 }) },
        onError: { target: 'idle', actions: assign({ error: ({ event }) => event.error as CounterContext['error'] }) },
      },
    },
    signing: {
      invoke: {
        src: 'sign',
        input: ({ context }) => ({ n: context.signed }),
        onDone: { target: 'idle', actions: assign({ signed: ({ context }) => context.signed + 1 }) },
        onError: [
          {
            guard: 'interrupted',
            target: 'uncertain',
            actions: assign({ error: ({ event }) => event.error as CounterContext['error'] }),
          },
          { target: 'idle', actions: assign({ error: ({ event }) => event.error as CounterContext['error'] }) },
        ],
      },
    },
    sleeping: {
      on: {
        WAKE: { target: 'idle', actions: assign({ wakes: ({ context }) => context.wakes + 1, wakeAt: null }) },
      },
    },
    /** A signing interrupted by a crash: it is never signed again by itself. */
    uncertain: { on: { FINISH: 'finished' } },
    finished: { type: 'final' },
  },
});

/** A counter definition with the given effects (defaults resolve at once). */
export function counterDefinition(
  effects: { bump?: EffectSpec['run']; sign?: EffectSpec['run'] } = {},
  extra: Partial<MachineDefinition<typeof counterMachine>> = {},
): MachineDefinition<typeof counterMachine> {
  return {
    name: 'counter',
    version: 1,
    machine: counterMachine,
    effects: {
      bump: { run: effects.bump ?? (async () => 1), delivery: 'at-least-once' },
      sign: { run: effects.sign ?? (async () => 'sig'), delivery: 'at-most-once' },
    },
    persist: () => undefined,
    wakeAt: (s) => (s.matches('sleeping') ? s.context.wakeAt : null),
    ...extra,
  };
}
