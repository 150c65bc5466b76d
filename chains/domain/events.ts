/**
 * The webhook vocabulary: the events of the spec, which of them this service sends, and how a delivery is signed.
 * Part of the domain module (chains/domain/), which imports nothing.
 */

/** The webhook event types this service sends. */
export const EVENT_TYPES = [
  'wallet.created',
  'wallet.pregen_claimed',
  'transaction.signed',
  'send.broadcasted',
  'send.confirmed',
  'send.failed',
  'rest.transaction.confirmed',
  'rest.transaction.failed',
  'test.ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Spec event types that this service never sends: they belong to a user-facing system (sign-up, external wallets)
 * that a server-to-server custody service does not have.
 */
export const UNSENT_EVENT_TYPES = ['user.created', 'user.external_wallet_verified'] as const;

export type UnsentEventType = (typeof UNSENT_EVENT_TYPES)[number];

/** How a delivery is signed: the spec's `<timestamp>.<body>`, or Standard Webhooks' `<id>.<timestamp>.<body>`. */
export const SIGNATURE_FORMATS = ['timestamp-body', 'standard-webhooks'] as const;

export type SignatureFormat = (typeof SIGNATURE_FORMATS)[number];
