import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { CodedError } from '../../chains/domain/errors.ts';

/** How names are resolved (node's `dns.lookup` with `all: true`); tests give their own. */
export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveAll: ResolveAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Raised when a webhook target is, or resolves to, an address the service may not call. */
export class TargetRefusedError extends CodedError {
  override name = 'TargetRefusedError';
  constructor(message: string) {
    super('WEBHOOK_TARGET_NOT_ALLOWED', 400, message);
  }
}

/**
 * True for a public unicast address. Loopback, private (RFC 1918, unique local), link-local (with the cloud metadata
 * address 169.254.169.254), carrier-grade NAT, unspecified, multicast, documentation and the IPv6 forms that carry an
 * IPv4 address (mapped, NAT64, 6to4, Teredo) are all refused: ipaddr.js names every such range, and only `unicast`
 * passes. An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
 */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  return ipaddr.process(ip).range() === 'unicast';
}

/** The host of a URL as a bare name or address (IPv6 literals lose their brackets). */
function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Checks that `url`'s host is, or resolves only to, public addresses. Run when an endpoint is configured and again,
 * through `guardedLookup`, whenever a delivery opens a connection (a name that resolved to a public address may
 * resolve to a private one later: DNS rebinding).
 */
export async function assertPublicTarget(url: URL, resolveAll: ResolveAll = systemResolveAll): Promise<void> {
  const host = bareHost(url);
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw new TargetRefusedError(`${host} is not a public address`);
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch (err) {
    throw new TargetRefusedError(`${host} does not resolve (${(err as { code?: string }).code ?? 'lookup failed'})`);
  }
  if (addresses.length === 0) throw new TargetRefusedError(`${host} does not resolve`);
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) throw new TargetRefusedError(`${host} resolves to ${refused.address}, which is not a public address`);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for the sockets deliveries open: resolves as node would, then refuses the connection when any address is
 * not public. Node calls it only for names; an address literal is checked before the request (`assertPublicTarget`).
 */
export function guardedLookup(resolveAll: ResolveAll = systemResolveAll) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    resolveAll(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !isPublicAddress(a.address));
        if (refused || addresses.length === 0) {
          const err = new TargetRefusedError(
            `${hostname} resolves to ${refused?.address ?? 'nothing'}, which is not a public address`,
          ) as Error & NodeJS.ErrnoException;
          callback(err, '');
          return;
        }
        const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
        const usable = wanted ? addresses.filter((a) => a.family === wanted) : addresses;
        if ((options as LookupAllOptions).all) callback(null, usable);
        else if (usable[0]) callback(null, usable[0].address, usable[0].family);
        else callback(Object.assign(new Error(`${hostname} has no IPv${wanted} address`), { code: 'ENOTFOUND' }), '');
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
