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

/** Why each unsent type is never sent, as a clause a warning can end with. */
export const UNSENT_EVENT_REASONS: Record<UnsentEventType, string> = {
  'user.created':
    'this service has no user system (partners create wallets for their own user identifiers; nobody signs up here)',
  'user.external_wallet_verified': 'this service has no user system and verifies no external wallets',
};

/**
 * Every event type of the spec: what a webhook may select. The unsent ones are accepted so that a configuration
 * written for the spec is taken as it is; selecting them is answered with a warning.
 */
export const SPEC_EVENT_TYPES: readonly (EventType | UnsentEventType)[] = [...EVENT_TYPES, ...UNSENT_EVENT_TYPES];

/** How a delivery is signed: the spec's `<timestamp>.<body>`, or Standard Webhooks' `<id>.<timestamp>.<body>`. */
export const SIGNATURE_FORMATS = ['timestamp-body', 'standard-webhooks'] as const;

export type SignatureFormat = (typeof SIGNATURE_FORMATS)[number];
