import type { ActorHost } from '../../actors/host/host.ts';
import { ServiceError } from '../../chains/domain/errors.ts';
import type { ActorStore, StoredActor } from '../../store/actor-store.ts';

const DEFAULT_PAGE = 20;

const notFound = () => new ServiceError('ACTOR_NOT_FOUND', 404, 'actor not found');
const notFaulted = (actorId: string) =>
  new ServiceError('ACTOR_NOT_FAULTED', 409, 'only a faulted actor can be retried or abandoned', {
    details: { actorId },
  });

function summary(r: StoredActor) {
  return {
    actorId: r.actorId,
    machine: r.machine,
    machineVersion: r.machineVersion,
    state: r.state,
    status: r.faultedAt && !r.done ? ('faulted' as const) : r.done ? ('done' as const) : ('active' as const),
    wakeAt: r.wakeAt === null ? null : new Date(r.wakeAt).toISOString(),
    faultedAt: r.faultedAt,
    faultReason: r.faultReason,
    updatedAt: r.updatedAt,
  };
}

/** The operator's view of actors (admin API and CLI): list by machine, state or fault; retry or abandon faulted ones. */
export function createActorsAdmin(deps: {
  host: Pick<ActorHost, 'read' | 'retry' | 'abandon'>;
  store: Pick<ActorStore, 'get' | 'list' | 'effectsOf' | 'pendingEventsOf'>;
}) {
  const { host, store } = deps;

  function detail(actorId: string) {
    const row = store.get(actorId);
    if (!row) throw notFound();
    const view = host.read(actorId);
    return {
      ...summary(row),
      context: view?.context ?? {},
      abandonedAt: row.abandonedAt,
      effects: store.effectsOf(actorId).map((e) => ({ key: e.key, src: e.src, createdAt: e.createdAt })),
      pendingEvents: store.pendingEventsOf(actorId).length,
    };
  }

  return {
    list(q: { machine?: string; state?: string; faulted?: 'true' | 'false'; cursor?: string; limit?: string }) {
      const limit = q.limit ? Number(q.limit) : DEFAULT_PAGE;
      let after: string | undefined;
      if (q.cursor !== undefined) {
        after = Buffer.from(q.cursor, 'base64url').toString('utf8');
        if (!after.startsWith('a:'))
          throw new ServiceError('INVALID_CURSOR', 400, 'cursor is not one this service returned');
        after = after.slice(2);
      }
      const rows = store.list({
        machine: q.machine,
        state: q.state,
        faulted: q.faulted === undefined ? undefined : q.faulted === 'true',
        after,
        limit: limit + 1,
      });
      const hasMore = rows.length > limit;
      const page = hasMore ? rows.slice(0, limit) : rows;
      const last = page[page.length - 1];
      return {
        data: page.map(summary),
        pagination: {
          cursor: hasMore && last ? Buffer.from(`a:${last.actorId}`).toString('base64url') : null,
          hasMore,
          limit,
        },
      };
    },

    get: detail,

    async retry(actorId: string) {
      if (!store.get(actorId)) throw notFound();
      if (!(await host.retry(actorId))) throw notFaulted(actorId);
      return detail(actorId);
    },

    async abandon(actorId: string) {
      if (!store.get(actorId)) throw notFound();
      if (!(await host.abandon(actorId))) throw notFaulted(actorId);
      return detail(actorId);
    },
  };
}

export type ActorsAdmin = ReturnType<typeof createActorsAdmin>;
