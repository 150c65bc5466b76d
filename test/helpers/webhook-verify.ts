import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ReceivedDelivery } from '../../fixtures/webhook-receiver.ts';

/**
 * Verifies a delivery as the spec's "Events" section says, written from its words and nothing of the service's:
 * the signed message is `<webhook-timestamp>.<raw request body>`, HMAC-SHA256 with the webhook secret, base64;
 * compared in constant time with each signature after `v1,`; timestamps more than 300 seconds old rejected.
 */
export function verifySpecSignature(
  d: Pick<ReceivedDelivery, 'timestamp' | 'rawBody' | 'signature'>,
  secret: string,
  nowSec = Math.floor(Date.now() / 1000),
): boolean {
  if (Math.abs(nowSec - Number(d.timestamp)) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${d.timestamp}.${d.rawBody}`).digest();
  return d.signature.split(' ').some((s) => {
    if (!s.startsWith('v1,')) return false;
    const got = Buffer.from(s.slice(3), 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
