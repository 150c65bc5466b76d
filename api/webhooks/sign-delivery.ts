import { createHmac, randomBytes } from 'node:crypto';
import type { SignatureFormat } from '../../chains/domain/events.ts';

/** A new endpoint secret: `whsec_` and 32 random bytes in base64 (the Standard Webhooks secret format). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The HMAC key a secret stands for. Spec format: "HMAC-SHA256 with the webhook secret", the secret string as given.
 * Standard Webhooks: the bytes the base64 after `whsec_` encodes.
 */
function hmacKey(format: SignatureFormat, secret: string): string | Buffer {
  return format === 'standard-webhooks' ? Buffer.from(secret.slice('whsec_'.length), 'base64') : secret;
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256>` per active secret, space-delimited.
 * Signed message, spec format: `<webhook-timestamp>.<raw body>`; Standard Webhooks: `<webhook-id>.<webhook-timestamp>.<raw body>`.
 */
export function signDelivery(
  format: SignatureFormat,
  secrets: readonly string[],
  msg: { id: string; timestamp: number; body: string },
): string {
  const signed =
    format === 'standard-webhooks' ? `${msg.id}.${msg.timestamp}.${msg.body}` : `${msg.timestamp}.${msg.body}`;
  return secrets.map((s) => `v1,${createHmac('sha256', hmacKey(format, s)).update(signed).digest('base64')}`).join(' ');
}

/**
 * The request body of an event: the envelope `{id, type, createdAt, data}`, built from the stored event so that every
 * retry sends the same bytes (`data` is the JSON text written with the event).
 */
export function envelopeBody(e: { id: string; type: string; createdAt: string; data: string }): string {
  return `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"createdAt":${JSON.stringify(e.createdAt)},"data":${e.data}}`;
}
