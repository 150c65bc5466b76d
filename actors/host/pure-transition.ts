import {
  type AnyMachineSnapshot,
  type AnyStateMachine,
  createActor,
  type EventObject,
  type ExecutableActionsFrom,
} from 'xstate';

type Actions = ExecutableActionsFrom<AnyStateMachine>[];

/**
 * XState's pure `transition()` / `initialTransition()` for one machine, with the inert actor scope built once.
 * The library's functions build a new scope per call, which creates (and initializes) a whole actor each time:
 * most of a step's cost (`npm run bench:actors`). The scope never runs anything: actions are collected and
 * returned, exactly as the library's functions do. It is shared by every actor of the machine, which is safe
 * because nothing is ever started or registered in it; a `systemId` would be registered, so the host refuses
 * invokes that name one.
 */
export function createPureTransition(machine: AnyStateMachine) {
  const self = createActor(machine);
  let collected: Actions = [];
  const scope = {
    self,
    defer: () => undefined,
    id: '',
    logger: () => undefined,
    sessionId: '',
    stopChild: () => undefined,
    system: self.system,
    emit: () => undefined,
    actionExecutor: (action: Actions[number]) => {
      collected.push(action);
    },
  };
  const run = (compute: () => AnyMachineSnapshot): [AnyMachineSnapshot, Actions] => {
    collected = [];
    const snapshot = compute();
    const actions = collected;
    collected = [];
    return [snapshot, actions];
  };
  return {
    initial: (input: unknown) => run(() => machine.getInitialSnapshot(scope as never, input)),
    next: (snapshot: AnyMachineSnapshot, event: EventObject) =>
      run(() => machine.transition(snapshot, event, scope as never)),
  };
}

export type PureTransition = ReturnType<typeof createPureTransition>;
