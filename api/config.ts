import path from 'node:path';
import { resolveUid } from '../enclave/socket-check.ts';
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
  chainsFile?: string;
  /** The checked content of CHAINS_FILE; empty when unset (every chain is then refused). */
  chains: ChainsFile;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustProxy: boolean;
  webhookAllowPrivateTargets: boolean;
  monitorWindowMs: number;
  evmReplacementDelayMs: number;
  chainPollIntervalMs: number;
  webhookRetryBaseMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
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
  const host = env['HOST'] || '127.0.0.1';
  const adminToken = env['ADMIN_TOKEN'] || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    problems.push('ADMIN_TOKEN must be at least 16 characters (or unset, to generate one)');
  }
  const logLevel = (env['LOG_LEVEL'] || 'info') as Config['logLevel'];
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')} (got "${logLevel}")`);

  let chains: ChainsFile = {};
  if (env['CHAINS_FILE']) {
    const read = readChainsFile(env['CHAINS_FILE']);
    chains = read.chains;
    problems.push(...read.problems);
  }

  const enclaveUser = env['ENCLAVE_USER'] || undefined;
  const enclaveUid = enclaveUser === undefined ? undefined : resolveUid(enclaveUser);
  if (enclaveUser !== undefined && enclaveUid === undefined) {
    problems.push(`ENCLAVE_USER names no user on this system (got "${enclaveUser}")`);
  }

  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host,
    dataDir,
    adminToken,
    enclaveSocket: env['ENCLAVE_SOCKET'] || path.join(dataDir, 'enclave.sock'),
    ...(enclaveUid === undefined ? {} : { enclaveUid }),
    chainsFile: env['CHAINS_FILE'] || undefined,
    chains,
    logLevel,
    trustProxy: bool('TRUST_PROXY', false),
    webhookAllowPrivateTargets: bool('WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    monitorWindowMs: int('MONITOR_WINDOW_MS', 30 * 60_000, 1, 24 * 3600_000),
    evmReplacementDelayMs: int('EVM_REPLACEMENT_DELAY_MS', 60_000, 1, 24 * 3600_000),
    chainPollIntervalMs: int('CHAIN_POLL_INTERVAL_MS', 2_000, 1, 3600_000),
    webhookRetryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 5_000, 1, 3600_000),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
