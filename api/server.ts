import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createGenerateWalletKey } from '../actors/generate-wallet-key.ts';
import { createActorHost } from '../actors/host.ts';
import { createUserShareHandoff } from '../actors/user-share-handoff.ts';
import { createWalletDefinition } from '../actors/wallet-definition.ts';
import { createEnclaveClient } from '../enclave/client.ts';
import { createStore } from '../store/index.ts';
import { resolveAdminToken } from './admin-token.ts';
import { buildApp } from './app.ts';
import { createChainPool } from './chain-pool.ts';
import type { Config } from './config.ts';
import { createAuthenticator } from './plugins/auth.ts';
import { createMetrics } from './plugins/metrics.ts';
import { createAdminService } from './services/admin.ts';
import { createShareMigrationService } from './services/share-migration.ts';
import { allowAllSignatures, type SignaturePolicy } from './services/signature-policy.ts';
import { createSigningService } from './services/signing.ts';
import { createWalletService } from './services/wallets.ts';

export interface RunningApi {
  app: FastifyInstance;
  /** Where the admin token came from (a file path or ADMIN_TOKEN). */
  adminTokenSource: string;
  /** Starts background workers ahead of need (after listening, so that it does not delay readiness). */
  warm(): void;
  close(): Promise<void>;
}

/**
 * Wires the API process once: store (migrations applied), enclave client, actor host (live actors
 * restored), services and the HTTP app. Does not listen.
 */
export async function startApi(
  config: Config,
  opts: {
    enclaveConnectTimeoutMs?: number;
    /** The signature decision point; default: allow every signature (no policies exist yet). */
    signaturePolicy?: SignaturePolicy;
  } = {},
): Promise<RunningApi> {
  const store = createStore(path.join(config.dataDir, 'service.db'));
  const enclave = createEnclaveClient({ socketPath: config.enclaveSocket });
  try {
    await enclave.connect({ timeoutMs: opts.enclaveConnectTimeoutMs ?? 30_000 });
  } catch (err) {
    store.close();
    throw err;
  }
  const userShares = createUserShareHandoff();
  const host = createActorHost({
    writer: store.writer,
    snapshots: store.snapshots,
    definitions: [
      createWalletDefinition({
        wallets: store.wallets,
        outbox: store.outbox,
        generateKey: createGenerateWalletKey(enclave, userShares),
      }),
    ],
  });
  host.restoreAll();

  const { token, source } = resolveAdminToken(config.dataDir, config.adminToken);
  const authenticator = createAuthenticator(store);
  const metrics = createMetrics();
  const chainPool = createChainPool({ onRun: (step, where) => metrics.chainSteps.inc({ step, where }) });
  metrics.watchChainPoolQueue(() => chainPool.queueSize);
  const app = await buildApp({
    config,
    adminToken: token,
    authenticator,
    metrics,
    wallets: createWalletService({ store, host, userShares }),
    signing: createSigningService({
      store,
      enclave,
      policy: opts.signaturePolicy ?? allowAllSignatures,
      chainPool,
    }),
    migration: createShareMigrationService({ store, enclave }),
    admin: createAdminService({ store, authenticator, enclave }),
    ready: async () => {
      let enclaveOk = false;
      try {
        await enclave.ping();
        enclaveOk = true;
      } catch {
        enclaveOk = false;
      }
      let dbOk = false;
      try {
        dbOk = store.ping();
      } catch {
        dbOk = false;
      }
      return { database: dbOk, enclave: enclaveOk };
    },
  });

  return {
    app,
    adminTokenSource: source,
    warm() {
      chainPool.warm();
    },
    async close() {
      await app.close();
      await chainPool.close();
      await host.stop();
      await enclave.close();
      store.close();
    },
  };
}
