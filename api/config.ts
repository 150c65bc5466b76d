import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { DEFAULT_APPROVAL_CASE_TTL_MS, DEFAULT_REVIEW_TTL_MS } from '../chains/domain/approvals.ts';
import { InternalError } from '../chains/domain/errors.ts';
import { defaultSocketPath, resolveUid } from '../enclave/public.ts';
import { type ChainsFile, readChainsFile } from './chains-config.ts';

/** The service's configuration, read once from the environment at boot. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  adminToken?: string;
  enclaveSocket: string;
  /** The enclave's OS user (ENCLAVE_USER, a name or uid): the enclave socket must be owned by it. */
  enclaveUid?: number;
  /** The checked content of CHAINS_FILE; empty when unset (every chain is then refused). */
  chains: ChainsFile;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Which `X-Forwarded-For` hops the public listener believes: `false` (none, the default), a number of
   * proxies in front of the service, or the proxies' own addresses as CIDRs. Never "every hop".
   */
  trustProxy: TrustProxy;
  /** The admin API's own listener (`/admin/v1`, `/metrics`): loopback by default. */
  adminHost: string;
  adminPort: number;
  /** Requests per minute per client address on the admin listener, failed authentications included. */
  adminRateLimitPerMinute: number;
  /** Timeouts and caps of the listeners (see HTTP_LIMIT_DEFAULTS). */
  http: HttpLimits;
  webhookAllowPrivateTargets: boolean;
  monitorWindowMs: number;
  /** EVM_REPLACEMENT_DELAY_MS: the least time between an auto-retry attempt's send and its replacement. */
  replacementDelayMs: number;
  chainPollIntervalMs: number;
  /** Unit of the webhook retry schedule (see api/webhooks/retry-schedule.ts). */
  webhookRetryBaseMs: number;
  /** Bound on one webhook attempt: connect, send, and the answer's headers. */
  webhookTimeoutMs: number;
  /** APPROVAL_CASE_TTL_MS: an approval case's lifetime (the spec's seven days). */
  approvalCaseTtlMs: number;
  /** REVIEW_TTL_MS: a review's lifetime (24 hours). */
  reviewTtlMs: number;
}

export type TrustProxy = false | number | string[];

/** Timeouts and caps of the HTTP listeners, against slow and idle clients. */
export interface HttpLimits {
  /** The request line and headers must arrive within this (also a connection that sends nothing). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** A connection with no traffic either way for this long is closed (a client that stops reading). */
  idleTimeoutMs: number;
  /** An idle keep-alive connection is closed after this; keep it above a proxy's upstream idle timeout. */
  keepAliveTimeoutMs: number;
  /**
   * Open connections of the public listener; at the cap the connection longest without progress is closed
   * to admit a new one (plugins/connection-guard.ts).
   */
  maxConnections: number;
}

/** The defaults of `HttpLimits` (docs/operations.md, Configuration). */
export const HTTP_LIMIT_DEFAULTS: HttpLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 10_000,
};

/** Default address and port of the public listener (HOST, PORT). */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;

/** Default address and port of the admin listener (ADMIN_HOST, ADMIN_PORT). */
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
export const DEFAULT_ADMIN_PORT = 8081;

/** Shortest ADMIN_TOKEN accepted (a generated one is 43 characters). */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/**
 * Parses TRUST_PROXY: unset, empty, `false` or `0` trust no proxy; a whole number is how many proxies
 * stand in front of the service (the address each of them appended is believed, nothing left of it); a
 * comma-separated list of addresses or CIDRs names the proxies themselves. `true` is refused: trusting
 * every hop would let any caller pick its own address with a forged `X-Forwarded-For`.
 */
export function parseTrustProxy(raw: string | undefined): { value: TrustProxy; problem?: string } {
  const s = (raw ?? '').trim();
  if (s === '' || s.toLowerCase() === 'false' || s === '0') return { value: false };
  if (['true', 'yes', 'on'].includes(s.toLowerCase())) {
    return {
      value: false,
      problem:
        `TRUST_PROXY=${s} would trust every hop of X-Forwarded-For, so any caller could forge its address past the ` +
        'IP allowlist; set the number of proxies in front of the service (e.g. 1) or their addresses as CIDRs ' +
        '(e.g. 10.0.0.5,10.1.0.0/16)',
    };
  }
  if (/^\d+$/.test(s)) {
    const hops = Number(s);
    if (hops > 16) return { value: false, problem: `TRUST_PROXY must be a hop count from 0 to 16 (got "${s}")` };
    return { value: hops };
  }
  const cidrs: string[] = [];
  for (const entry of s.split(',').map((e) => e.trim())) {
    const [host = '', bits] = entry.split('/', 2);
    const valid = bits === undefined ? ipaddr.isValid(host) : /^\d{1,3}$/.test(bits) && ipaddr.isValidCIDR(entry);
    // ipaddr also reads `10` or `127.1` as IPv4; a proxy address written that way is a typo.
    if (!valid || (!host.includes(':') && !/^\d{1,3}(\.\d{1,3}){3}$/.test(host))) {
      return {
        value: false,
        problem: `TRUST_PROXY must be a hop count or comma-separated proxy addresses/CIDRs; "${entry}" is neither`,
      };
    }
    cidrs.push(bits === undefined ? host : `${host}/${Number(bits)}`);
  }
  return { value: cidrs };
}

export class ConfigError extends InternalError {
  constructor(readonly problems: string[]) {
    super('CONFIG_INVALID', `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Reads and checks the environment. Every problem is collected and reported at once, each naming its
 * variable, so an operator fixes them in one go.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, dflt: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return dflt;
    }
    return Number(raw);
  };
  const bool = (name: string, dflt: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return dflt;
  };

  const dataDir = path.resolve(env['DATA_DIR'] || './data');
  const host = env['HOST'] || DEFAULT_HOST;
  const adminToken = env['ADMIN_TOKEN'] || undefined;
  if (adminToken !== undefined && adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    problems.push(
      `ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (got ${adminToken.length}; or unset, to generate one)`,
    );
  }
  const trust = parseTrustProxy(env['TRUST_PROXY']);
  if (trust.problem) problems.push(trust.problem);
  const adminHost = env['ADMIN_HOST'] || DEFAULT_ADMIN_HOST;
  if (!ipaddr.isValid(adminHost) && !/^[A-Za-z0-9.-]{1,253}$/.test(adminHost)) {
    problems.push(`ADMIN_HOST must be an address or host name (got "${adminHost}")`);
  }
  const logLevel = (env['LOG_LEVEL'] || 'info') as Config['logLevel'];
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')} (got "${logLevel}")`);

  let chains: ChainsFile = {};
  if (env['CHAINS_FILE']) {
    const read = readChainsFile(env['CHAINS_FILE']);
    chains = read.chains;
    problems.push(...read.problems);
  }

  const port = int('PORT', DEFAULT_PORT, 0, 65535);
  const adminPort = int('ADMIN_PORT', DEFAULT_ADMIN_PORT, 0, 65535);
  if (adminPort !== 0 && adminPort === port) problems.push(`ADMIN_PORT must differ from PORT (both ${port})`);
  const http: HttpLimits = {
    headersTimeoutMs: int('HTTP_HEADERS_TIMEOUT_MS', HTTP_LIMIT_DEFAULTS.headersTimeoutMs, 100, 600_000),
    requestTimeoutMs: int('HTTP_REQUEST_TIMEOUT_MS', HTTP_LIMIT_DEFAULTS.requestTimeoutMs, 100, 3_600_000),
    idleTimeoutMs: int('HTTP_IDLE_TIMEOUT_MS', HTTP_LIMIT_DEFAULTS.idleTimeoutMs, 100, 3_600_000),
    keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', HTTP_LIMIT_DEFAULTS.keepAliveTimeoutMs, 100, 3_600_000),
    maxConnections: int('HTTP_MAX_CONNECTIONS', HTTP_LIMIT_DEFAULTS.maxConnections, 1, 1_000_000),
  };
  // Node refuses a headers timeout above the request timeout; say so here rather than at listen.
  if (http.headersTimeoutMs > http.requestTimeoutMs) {
    problems.push(
      `HTTP_HEADERS_TIMEOUT_MS (${http.headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${http.requestTimeoutMs})`,
    );
  }
  const enclaveUser = env['ENCLAVE_USER'] || undefined;
  const enclaveUid = enclaveUser === undefined ? undefined : resolveUid(enclaveUser);
  if (enclaveUser !== undefined && enclaveUid === undefined) {
    problems.push(`ENCLAVE_USER names no user on this system (got "${enclaveUser}")`);
  }

  const config: Config = {
    port,
    host,
    dataDir,
    adminToken,
    enclaveSocket: env['ENCLAVE_SOCKET'] || defaultSocketPath(dataDir),
    ...(enclaveUid === undefined ? {} : { enclaveUid }),
    chains,
    logLevel,
    trustProxy: trust.value,
    adminHost,
    adminPort,
    adminRateLimitPerMinute: int('ADMIN_RATE_LIMIT_PER_MINUTE', 300, 1, 10_000_000),
    http,
    webhookAllowPrivateTargets: bool('WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    monitorWindowMs: int('MONITOR_WINDOW_MS', 30 * 60_000, 1, 24 * 3600_000),
    replacementDelayMs: int('EVM_REPLACEMENT_DELAY_MS', 60_000, 1, 24 * 3600_000),
    chainPollIntervalMs: int('CHAIN_POLL_INTERVAL_MS', 2_000, 1, 3600_000),
    webhookRetryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 5_000, 1, 3600_000),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    approvalCaseTtlMs: int('APPROVAL_CASE_TTL_MS', DEFAULT_APPROVAL_CASE_TTL_MS, 1, 366 * 24 * 3600_000),
    reviewTtlMs: int('REVIEW_TTL_MS', DEFAULT_REVIEW_TTL_MS, 1, 366 * 24 * 3600_000),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
