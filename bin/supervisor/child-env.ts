/**
 * What each child of the supervisor gets of its environment: an allowlist, never the whole environment, so
 * that a secret given to the supervisor (or anything else in its environment) does not reach the API.
 * Secrets are not passed here at all: the supervisor hands them over on file descriptors (see main.ts).
 *
 * The supervisor reads none of these (each child checks its own configuration); it only forwards them. A
 * variable a child reads must be listed here, or `npm start` silently drops it: test/child-env.test.ts reads
 * the API's configuration sources and fails when one is missing.
 */

/** The system's and Node's own variables, for both children. */
const COMMON = [
  'PATH',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'NODE_ENV',
  'NODE_OPTIONS',
  'UV_THREADPOOL_SIZE',
  'LOG_LEVEL',
  'DATA_DIR',
  'ENCLAVE_SOCKET',
];

/** The API's configuration (api/config.ts and what it reads), besides COMMON. */
export const API_VARS: readonly string[] = [
  'PORT',
  'HOST',
  'ADMIN_HOST',
  'ADMIN_PORT',
  'ADMIN_RATE_LIMIT_PER_MINUTE',
  'HTTP_HEADERS_TIMEOUT_MS',
  'HTTP_REQUEST_TIMEOUT_MS',
  'HTTP_IDLE_TIMEOUT_MS',
  'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  'HTTP_MAX_CONNECTIONS',
  'CHAINS_FILE',
  'TRUST_PROXY',
  'WEBHOOK_ALLOW_PRIVATE_TARGETS',
  'MONITOR_WINDOW_MS',
  'EVM_REPLACEMENT_DELAY_MS',
  'CHAIN_POLL_INTERVAL_MS',
  'WEBHOOK_RETRY_BASE_MS',
  'WEBHOOK_TIMEOUT_MS',
  'APPROVAL_CASE_TTL_MS',
  'REVIEW_TTL_MS',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

/** Secrets of each child: read by the supervisor (env, descriptor or credential) and handed over on a pipe. */
export const SECRETS = {
  enclave: ['ENCLAVE_MASTER_KEY', 'ENCLAVE_MASTER_KEY_NEXT'],
  api: ['ADMIN_TOKEN'],
} as const;

/** The supervisor's own settings, which no child needs. */
const SUPERVISOR_ONLY = new Set(['ENCLAVE_USER', 'API_USER']);

function isSecretVariable(name: string): boolean {
  const all: readonly string[] = [...SECRETS.enclave, ...SECRETS.api];
  return all.some((secret) => name === secret || name === `${secret}_FD`);
}

/** True when `name` may be passed to the `child`. */
export function allowedFor(child: 'enclave' | 'api', name: string): boolean {
  if (isSecretVariable(name) || SUPERVISOR_ONLY.has(name) || name === 'CREDENTIALS_DIRECTORY') return false;
  if (COMMON.includes(name) || name.startsWith('LC_')) return true;
  // The enclave's settings all start with ENCLAVE_ (its socket, and whatever it gains later).
  return child === 'api' ? API_VARS.includes(name) : name.startsWith('ENCLAVE_');
}

/** The environment of a child: the allowed variables of `parent`, then `extra` (HOME, descriptor numbers). */
export function childEnv(
  child: 'enclave' | 'api',
  parent: Record<string, string | undefined>,
  extra: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && allowedFor(child, name)) env[name] = value;
  }
  return { ...env, ...extra };
}
