import { CodedError } from '../../chains/domain/errors.ts';
import type { ActorHost } from '../host/host.ts';
import type { ActorView } from '../host/types.ts';
import type { PaymentContext, SignReference } from './payment.machine.ts';
import type { PaymentDefinition, PaymentView } from './payment-definition.ts';

/** A prepared step's refused SIGN as its caller answers it: the decision point's code, status and body. */
export class StepRefusal extends CodedError {
  constructor(code: string, httpStatus: number, message: string, details: Record<string, unknown>) {
    super(code, httpStatus, message, { details });
    this.name = 'StepRefusal';
  }
}

/**
 * What a SIGN delivered to a prepared step came to, read from the state it committed:
 * `signing`: the SIGN was taken (now or by an earlier SIGN): the signature is under way or past, CANCEL is refused;
 * `held`: the policy holds it (a review or case, FORBIDDEN, a CONFLICT): nothing signed, still prepared with the same
 * payload, nonce and fees; `refusal` is what the caller answers (its `reviewId` / `caseId` in `details`);
 * `denied`: the policy denied it: the step failed with the policy's code, nothing signed;
 * `ended`: the step had ended without a signature (cancelled, or its signing refused);
 * `queued`: the step is faulted: the SIGN is stored, and applied (decided then) when the operator retries it.
 */
export type SignOutcome =
  | { outcome: 'signing'; view: PaymentView }
  | { outcome: 'held'; refusal: StepRefusal; view: PaymentView }
  | { outcome: 'denied'; refusal: StepRefusal; view: PaymentView }
  | { outcome: 'ended'; view: PaymentView }
  | { outcome: 'queued'; view: PaymentView };

function viewOf(def: PaymentDefinition, actor: ActorView): PaymentView {
  return def.view!(actor as unknown as ActorView<PaymentContext>);
}

/** The refusal noted by the step's latest refused SIGN, as the error its caller answers. */
function refusalOf(c: PaymentContext): StepRefusal {
  const r = c.signRefusal!;
  return new StepRefusal(r.code, r.httpStatus, r.message, r.details);
}

/** Whether a committed state is a prepared step that never reached its signing (attempt 0 never left `prepared`). */
function neverSigned(c: PaymentContext): boolean {
  const stage = c.attempts[0]?.stage;
  return stage === 'prepared' || (stage === 'rejected' && c.signedTransaction === null && c.hash === null);
}

/**
 * Delivers SIGN to prepared step `transactionId` (durably: it resolves once the step that applied it is committed) and
 * says what it came to. `eventId` deduplicates a resend of the same SIGN; a later SIGN after an approval needs a new
 * one. `reference` names the request for holds and must be the same on every SIGN of the step.
 */
export async function signPreparedStep(
  host: Pick<ActorHost, 'deliver'>,
  def: PaymentDefinition,
  transactionId: string,
  sign: { eventId?: string; reference?: SignReference; initiatorUserId?: string | null } = {},
): Promise<SignOutcome> {
  const result = await host.deliver(
    transactionId,
    {
      type: 'SIGN',
      ...(sign.reference ? { reference: sign.reference } : {}),
      ...(sign.initiatorUserId !== undefined ? { initiatorUserId: sign.initiatorUserId } : {}),
    },
    sign.eventId === undefined ? {} : { id: sign.eventId },
  );
  const view = viewOf(def, result.actor);
  const c = view.context;
  if (result.outcome === 'stored') return { outcome: 'queued', view };
  if (view.cancellable) {
    // Still prepared after its SIGN was applied: only a refusal leaves it so.
    if (!c.signRefusal) throw new Error(`prepared step ${transactionId}: a SIGN was applied without a decision`);
    return { outcome: 'held', refusal: refusalOf(c), view };
  }
  if (!neverSigned(c)) return { outcome: 'signing', view };
  if (c.signRefusal?.effect === 'deny' && c.failure?.code === c.signRefusal.code) {
    return { outcome: 'denied', refusal: refusalOf(c), view };
  }
  return { outcome: 'ended', view };
}

/**
 * Delivers CANCEL to prepared step `transactionId`: `cancelled` when the step ended cancelled before it was signed (by
 * this CANCEL or an earlier one), with its nonce and wallet released; false when its SIGN had been taken (or it had
 * ended otherwise), in which case nothing changed: the caller answers 409. `queued`: the step is faulted; the CANCEL is
 * stored and applied when the operator retries it.
 */
export async function cancelPreparedStep(
  host: Pick<ActorHost, 'deliver'>,
  def: PaymentDefinition,
  transactionId: string,
  cancel: { eventId?: string; reason?: string } = {},
): Promise<{ cancelled: boolean; queued: boolean; view: PaymentView }> {
  const result = await host.deliver(
    transactionId,
    { type: 'CANCEL', ...(cancel.reason !== undefined ? { reason: cancel.reason } : {}) },
    cancel.eventId === undefined ? {} : { id: cancel.eventId },
  );
  const view = viewOf(def, result.actor);
  return {
    cancelled: view.context.failure?.code === 'CANCELLED_BEFORE_SIGNING',
    queued: result.outcome === 'stored',
    view,
  };
}
