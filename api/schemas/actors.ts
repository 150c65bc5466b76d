import { Type } from '@sinclair/typebox';
import { LIMIT_PATTERN, Paginated, StringEnum } from './common.ts';

export const ActorStatusSchema = StringEnum(['active', 'done', 'faulted'], {
  description:
    'active: running or waiting for an event or its wake time; done: finished (or abandoned); faulted: its steps kept failing, held for the operator',
});

export const ActorSummary = Type.Object(
  {
    actorId: Type.String(),
    machine: Type.String({ description: 'The machine it runs: wallet, …' }),
    machineVersion: Type.Integer({ description: 'The machine version its stored state was written with' }),
    state: Type.Union([Type.String(), Type.Null()], { description: 'The state it is in: creating, ready, …' }),
    status: ActorStatusSchema,
    wakeAt: Type.Union([Type.String(), Type.Null()], { description: 'When the scheduler wakes it (ISO 8601)' }),
    faultedAt: Type.Union([Type.String(), Type.Null()]),
    faultReason: Type.Union([Type.String(), Type.Null()]),
    updatedAt: Type.String(),
  },
  { $id: 'ActorSummary' },
);

export const ActorDetail = Type.Composite(
  [
    ActorSummary,
    Type.Object({
      context: Type.Record(Type.String(), Type.Unknown(), { description: "The machine's stored context" }),
      abandonedAt: Type.Union([Type.String(), Type.Null()]),
      effects: Type.Array(Type.Object({ key: Type.String(), src: Type.String(), createdAt: Type.String() }), {
        description: 'Effects asked for by its committed state and not yet applied',
      }),
      pendingEvents: Type.Integer({ description: 'Events stored while it was faulted, applied in order on retry' }),
    }),
  ],
  { $id: 'ActorDetail' },
);

export const ActorList = Paginated(ActorSummary, 'ActorList');

export const ActorListQuery = Type.Object(
  {
    machine: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    state: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    faulted: Type.Optional(StringEnum(['true', 'false'], { description: 'Only faulted actors (true) or only others' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: '1 to 100, default 20' })),
  },
  { additionalProperties: false },
);

export const ActorIdParams = Type.Object({ actorId: Type.String({ minLength: 1, maxLength: 128 }) });
