import { CodedError, InternalError } from '../../chains/domain/errors.ts';

/**
 * Errors of the actor host; the API's error handler answers them in the service's envelope (a transient 503
 * carries `Retry-After`).
 */
export class ActorHostError extends CodedError {
  constructor(code: string, httpStatus: number, message: string, opts: { transient?: boolean; cause?: unknown } = {}) {
    super(code, httpStatus, message, opts);
    this.name = 'ActorHostError';
  }
}

/** The host holds as many live actors as it may: new work waits outside (503, retry shortly). */
export const actorsBusy = () =>
  new ActorHostError('SERVICE_BUSY', 503, 'the service is at its limit of work in progress; retry shortly', {
    transient: true,
  });

export const actorNotFound = (actorId: string) => new ActorHostError('ACTOR_NOT_FOUND', 404, `no actor ${actorId}`);

/** The host is stopping: nothing new starts. */
export const hostStopped = () =>
  new ActorHostError('SERVICE_STOPPING', 503, 'the service is shutting down; retry shortly', { transient: true });

/** The actor's steps kept failing; the operator decides (admin API: retry or abandon). */
export class ActorFaultedError extends ActorHostError {
  constructor(actorId: string, reason: string) {
    super('ACTOR_FAULTED', 500, `actor ${actorId} faulted and waits for the operator: ${reason}`);
    this.name = 'ActorFaultedError';
  }
}

/** A stored actor this code cannot run (a newer machine version, or a machine it does not know). */
export class ActorVersionError extends InternalError {
  override name = 'ActorVersionError';
  constructor(message: string) {
    super('ACTOR_VERSION_UNSUPPORTED', message);
  }
}
