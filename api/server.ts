import path from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type ActorHost, createActorHost } from '../actors/host/host.ts';
import type { AnyMachineDefinition } from '../actors/host/types.ts';
import { type ChainPoller, createChainPoller } from '../actors/payment/chain-poller.ts';
import { createPaymentDefinition } from '../actors/payment/payment-definition.ts';
import { createReplacementAuthority } from '../actors/payment/replacement-authority.ts';
import { createPaymentSigning } from '../actors/payment/sign-payment.ts';
import { createStepAuthority } from '../actors/payment/step-authority.ts';
import type { HoldResolver, PolicySource } from '../actors/signing/policy/policy-ports.ts';
import type { PolicyReader } from '../actors/signing/policy/policy-reader.ts';
import { policyReaderOf, policySourceOf } from '../actors/signing/policy/policy-source.ts';
import { createSignatureGate, type SignaturePolicy } from '../actors/signing/signature-policy.ts';
import { createWalletSigner } from '../actors/signing/wallet-signer.ts';
import { createGenerateWalletKey } from '../actors/wallet/generate-wallet-key.ts';
import { createUserShareHandoff } from '../actors/wallet/user-share-handoff.ts';
import { createWalletDefinition } from '../actors/wallet/wallet-definition.ts';
import { createYieldDefinition } from '../actors/yield/yield-definition.ts';
import { createYieldSteps } from '../actors/yield/yield-steps.ts';
import type { PaymentFamily } from '../chains/domain/payments.ts';
import { type LendingMarketOverride, resolveLendingMarket } from '../chains/evm/resolve-lending-market.ts';
import { createEnclaveClient } from '../enclave/client.ts';
import { socketOwners } from '../enclave/public.ts';
import { createStore } from '../store/index.ts';
import { resolveAdminToken } from './admin-token.ts';
import { type AppDeps, buildAdminApp, buildApp } from './app.ts';
import { createChainPool } from './chain-pool.ts';
import { type CreateChain, createChainRegistry } from './chain-registry.ts';
import type { Config } from './config.ts';
import { createEnclavePin } from './enclave-pin.ts';
import { createAuthenticator } from './plugins/auth.ts';
import { createMetrics } from './plugins/metrics.ts';
import { createActorsAdmin } from './services/actors-admin.ts';
import { createAdminService } from './services/admin.ts';
import { createApprovalsService } from './services/approvals.ts';
import { createHoldsAdmin } from './services/holds-admin.ts';
import { createIdempotency } from './services/idempotency.ts';
import { createPaymentService } from './services/payments.ts';
import { createPolicyService } from './services/policies.ts';
import { createPolicyInsights } from './services/policy-insights.ts';
import { createShareMigrationService } from './services/share-migration.ts';
import { createSigningService } from './services/signing.ts';
import { createWalletService } from './services/wallets.ts';
import { createWebhookService } from './services/webhooks.ts';
import { createYieldService } from './services/yield.ts';
import { createDeliveryEngine } from './webhooks/delivery-engine.ts';
import type { ResolveAll } from './webhooks/target-guard.ts';

/**
 * How long a node may not show a broadcast payment before the poller sends its exact bytes again (a node can drop a
 * transaction from its mempool or restart without it). EVM: thirty polling intervals, a minute at the default: a
 * payment waiting in a mempool is not shown either, and resending it costs the node a lookup each time. Solana: two
 * intervals, four seconds at the default: a transaction the leaders dropped is gone, and its blockhash lives about a
 * minute, so the identical bytes are sent again while it is valid (the spec's rule for auto-retry); a resend of bytes
 * already in costs nothing and lands nothing twice.
 */
function rebroadcastMs(family: PaymentFamily, pollIntervalMs: number): number {
  return (family === 'SOLANA' ? 2 : 30) * pollIntervalMs;
}

/** Accept queue of the public listener. */
const LISTEN_BACKLOG = 4096;

/** An error for the operator's log: its message and code, never a whole object that might carry a payload. */
function describeCause(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  return [typeof e?.code === 'string' ? e.code : '', typeof e?.message === 'string' ? e.message : String(err)]
    .filter(Boolean)
    .join(': ');
}

export interface RunningApi {
  /** The public listener's application (`/v1`, health, OpenAPI). */
  app: FastifyInstance;
  /** The admin listener's application (`/admin/v1`, `/metrics`, health). */
  adminApp: FastifyInstance;
  /** Where the admin token came from (a file path or ADMIN_TOKEN). */
  adminTokenSource: string;
  /**
   * Listens on both: the public listener on HOST:PORT, the admin listener on ADMIN_HOST:ADMIN_PORT (either
   * port 0 takes a free one). Answers the ports actually bound.
   */
  listen(): Promise<{ port: number; adminPort: number }>;
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
    /** Replaces the signature decision point (tests of the routes around it); default: createSignatureGate. */
    signaturePolicy?: SignaturePolicy;
    /**
     * What the decision point reads: the keys' switches and active guardrails, and cases and reviews. Default: the
     * service database's (the policy store, the approvals store).
     */
    policies?: { source: PolicySource; holds: HoldResolver; reader: PolicyReader };
    /** Most actors in memory at once (the host's back-pressure bound); default 10,000. */
    maxLiveActors?: number;
    /** Machines run beside the service's own (benchmarks run a waiting machine this way). */
    extraDefinitions?: AnyMachineDefinition[];
    /** Where enclave identity and socket events go (pinned, refused, verified again); default: the app's log. */
    enclaveLog?: (line: string) => void;
    /** How CHAINS_FILE entries become chains; default: each family's adapter (viem for EVM, web3.js for Solana). */
    createChain?: CreateChain;
    /**
     * Webhook delivery: certificates to trust beside the system's (PEM; the service takes NODE_EXTRA_CA_CERTS at
     * start, which a test running the API in its own process cannot set) and how names resolve.
     */
    webhooks?: { extraCa?: string; resolveAll?: ResolveAll };
  } = {},
): Promise<RunningApi> {
  const store = createStore(path.join(config.dataDir, 'service.db'), {
    checkpointOffThread: true,
    approvals: { caseTtlMs: config.approvalCaseTtlMs, reviewTtlMs: config.reviewTtlMs },
  });
  /** The app's logger once it exists (LOG_LEVEL applies); the operator's stderr before. */
  let appLog: FastifyBaseLogger | undefined;
  const enclaveLog =
    opts.enclaveLog ?? ((line: string) => (appLog ? appLog.warn(line) : process.stderr.write(`${line}\n`)));
  const enclave = createEnclaveClient({
    socketPath: config.enclaveSocket,
    identity: createEnclavePin({ dataDir: config.dataDir, log: enclaveLog }),
    owners: socketOwners(config.enclaveUid),
    log: enclaveLog,
  });
  try {
    await enclave.connect({ timeoutMs: opts.enclaveConnectTimeoutMs ?? 30_000 });
  } catch (err) {
    store.close();
    throw err;
  }
  /** A warning for the operator: to the app's log once it exists, to stderr before. */
  const warn = (msg: string, err?: unknown): void => {
    const cause = err === undefined ? undefined : describeCause(err);
    if (appLog) appLog.warn(cause === undefined ? {} : { cause }, msg);
    else console.error(cause === undefined ? msg : `${msg}: ${cause}`);
  };
  const userShares = createUserShareHandoff();
  const metrics = createMetrics();
  const chainPool = createChainPool({ onRun: (step, where) => metrics.chainSteps.inc({ step, where }) });
  const webhookEngine = createDeliveryEngine({
    webhooks: store.webhooks,
    outbox: store.outbox,
    writer: store.writer,
    retryBaseMs: config.webhookRetryBaseMs,
    timeoutMs: config.webhookTimeoutMs,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    ...opts.webhooks,
    log: warn,
    onAttempt: (outcome, ms) => {
      metrics.webhookAttempts.inc({ outcome });
      metrics.webhookAttemptDuration.observe(ms / 1000);
    },
  });

  const signer = createWalletSigner({ wallets: store.wallets, enclave });
  const gate = opts.signaturePolicy
    ? undefined
    : createSignatureGate({
        policies: opts.policies?.source ?? policySourceOf(store.policies),
        holds: opts.policies?.holds ?? store.approvals,
        spend: store.spend,
        decisions: store.policyDecisions,
        writer: store.writer,
        log: (msg, err) => warn(msg, err),
      });
  const signaturePolicy = opts.signaturePolicy ?? gate!;
  const signing = createSigningService({
    store,
    signer,
    policy: signaturePolicy,
    chainPool,
    webhooks: webhookEngine,
  });
  const chains = createChainRegistry(config.chains, opts.createChain);
  const walletActors = createWalletDefinition({
    wallets: store.wallets,
    outbox: store.outbox,
    generateKey: createGenerateWalletKey(enclave, userShares),
  });
  const paymentActors = createPaymentDefinition({
    transactions: store.transactions,
    outbox: store.outbox,
    idempotency: store.idempotency,
    sign: createPaymentSigning(signer),
    chain: (key) => chains.get(key),
    monitorWindowMs: config.monitorWindowMs,
    replacementDelayMs: config.replacementDelayMs,
    spend: store.spend,
    authority: createReplacementAuthority({
      apiKeys: store.apiKeys,
      wallets: store.wallets,
      policy: signaturePolicy,
    }),
    // A prepared step's SIGN (a yield step) is decided in the step that applies it.
    stepAuthority: createStepAuthority({
      apiKeys: store.apiKeys,
      wallets: store.wallets,
      policy: signaturePolicy,
    }),
  });
  const yieldOverrides = (config.chains['yield'] ?? []) as unknown as LendingMarketOverride[];
  // The operation's effects admit and sign payment steps through the host, which is made below from the definitions.
  let hostRef: ActorHost | undefined;
  const yieldActors = createYieldDefinition({
    yieldOps: store.yieldOps,
    transactions: store.transactions,
    pollMs: config.chainPollIntervalMs,
    steps: createYieldSteps({
      yieldOps: store.yieldOps,
      transactions: store.transactions,
      wallets: store.wallets,
      chain: (key) => chains.get(key),
      market: (chainId) => resolveLendingMarket(chainId, yieldOverrides),
      host: () => hostRef!,
      paymentActors,
      now: Date.now,
    }),
  });
  const host = createActorHost({
    store: store.actors,
    log: warn,
    onWakeLag: (ms) => metrics.actorWakeLag.observe(ms / 1000),
    ...(opts.maxLiveActors ? { maxLive: opts.maxLiveActors } : {}),
    definitions: [walletActors, paymentActors, yieldActors, ...(opts.extraDefinitions ?? [])],
  });
  hostRef = host;
  try {
    // A stored actor this release cannot run (newer, or unknown) stops the start, naming it.
    host.checkStoredVersions();
  } catch (err) {
    await enclave.close();
    store.close();
    throw err;
  }
  metrics.watchActors({ live: () => host.liveCount(), counts: () => store.actors.counts() });

  metrics.watchWebhooks(webhookEngine);

  const { token, source } = resolveAdminToken(config.dataDir, config.adminToken);
  const authenticator = createAuthenticator(store);
  metrics.watchChainPoolQueue(() => chainPool.queueSize);
  const webhooks = createWebhookService({
    store,
    engine: webhookEngine,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    ...(opts.webhooks?.resolveAll ? { resolveAll: opts.webhooks.resolveAll } : {}),
  });
  const idempotency = createIdempotency({
    store,
    log: (msg, err) => app.log.warn({ cause: describeCause(err) }, msg),
  });
  const deps: AppDeps = {
    config,
    adminToken: token,
    authenticator,
    metrics,
    wallets: createWalletService({ store, host, walletActors, userShares }),
    signing,
    payments: createPaymentService({ store, host, paymentActors, signing, signer, chains }),
    yield: createYieldService({ store, host, yieldActors, signer, chains, overrides: yieldOverrides }),
    policyInsights: createPolicyInsights({ store, policies: opts.policies?.reader ?? policyReaderOf(store.policies) }),
    migration: createShareMigrationService({ store, enclave }),
    admin: createAdminService({ store, authenticator, enclave, webhooks }),
    actors: createActorsAdmin({ host, store: store.actors }),
    holds: createHoldsAdmin({ store, host }),
    webhooks,
    approvals: createApprovalsService({
      store,
      permissionsEnabled: (apiKeyId) => store.policies.permissions(apiKeyId).enabled,
    }),
    policies: createPolicyService({
      store,
      cases: {
        pendingCasesOf: (policyId) => store.approvals.pendingCasesOf(policyId),
        invalidateCases: (policyId, at) => void store.approvals.invalidateUncompletedCases(policyId, at),
      },
    }),
    idempotency,
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
      return { database: dbOk, enclave: enclaveOk, actors: host.restored };
    },
  };
  const app = await buildApp(deps);
  const adminApp = await buildAdminApp(deps);
  const boundPort = (a: FastifyInstance) => {
    const addr = a.server.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  };

  appLog = app.log;
  const pollers: ChainPoller[] = chains.all().map((chain) =>
    createChainPoller({
      chain,
      transactions: store.transactions,
      host,
      intervalMs: config.chainPollIntervalMs,
      rebroadcastMs: rebroadcastMs(chain.family, config.chainPollIntervalMs),
      onRound: (r) => metrics.observePollRound(r),
      log: (msg, err) => app.log.warn(err === undefined ? {} : { cause: describeCause(err) }, msg),
    }),
  );
  // Deliveries due before a restart go out now; new ones as their transactions reach the disk.
  webhookEngine.start();
  idempotency.start();
  // Recovery runs while the API serves; /readyz says when it is done. The chain pollers start after it.
  const restore = host.start().then(
    () => {
      metrics.actorRestore.set((host.restoreMs ?? 0) / 1000);
      for (const p of pollers) p.start();
    },
    (err) => app.log.error({ cause: describeCause(err) }, 'actor recovery failed'),
  );

  return {
    app,
    adminApp,
    adminTokenSource: source,
    async listen() {
      await adminApp.listen({ port: config.adminPort, host: config.adminHost });
      // A deeper accept queue than Node's 511 (the kernel caps it at net.core.somaxconn): under a crowd of
      // connections, a caller's handshake then waits its turn instead of being dropped and retried seconds later.
      await app.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
      return { port: boundPort(app), adminPort: boundPort(adminApp) };
    },
    async close() {
      await Promise.all([app.close(), adminApp.close()]);
      await chainPool.close();
      await Promise.all(pollers.map((p) => p.stop()));
      await host.stop();
      await restore;
      await webhookEngine.stop();
      idempotency.stop();
      // Decision-log rows still queued are written before the store closes.
      await gate?.flush();
      await enclave.close();
      store.close();
    },
  };
}
