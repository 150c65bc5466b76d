import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MAX_MIGRATION_PAYLOAD_BYTES } from '../../../enclave/public.ts';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import { EnclavePublicKey, MigrateShareBody } from '../../schemas/signing.ts';
import { Wallet, WalletIdParams } from '../../schemas/wallets.ts';
import type { ShareMigrationService } from '../../services/share-migration.ts';

/** Room for the JSON around a 64 KB payload (quotes escaped inside the string); larger bodies answer 413. */
const MIGRATE_BODY_LIMIT = MAX_MIGRATION_PAYLOAD_BYTES + 16 * 1024;

/** `GET /v1/enclave/public-key` and `POST /v1/wallets/{walletId}/migrate-share`. */
export const shareMigrationRoutes: FastifyPluginAsyncTypebox<{ migration: ShareMigrationService }> = async (
  app,
  { migration },
) => {
  app.get(
    '/enclave/public-key',
    {
      schema: {
        tags: ['share migration'],
        operationId: 'getEnclavePublicKey',
        summary: "The enclave's P-256 public key for share migration",
        description:
          "The enclave's P-256 public key (and its algorithm) to encrypt a pre-generated wallet's user share for migrate-share; it changes only with the enclave's identity.",
        security: [{ apiKey: [] }],
        response: {
          200: ok(EnclavePublicKey, "The enclave's public key.", RATE_LIMIT_HEADERS),
          ...partnerErrors('ENCLAVE_UNAVAILABLE', 'ENCLAVE_TIMEOUT'),
        },
      },
    },
    async () => migration.publicKey(),
  );

  app.post(
    '/wallets/:walletId/migrate-share',
    {
      bodyLimit: MIGRATE_BODY_LIMIT,
      schema: {
        tags: ['share migration'],
        operationId: 'migrateShare',
        summary: "Migrate a pre-generated wallet's user share into the service",
        description:
          'ECIES-P256-AES256-SHA256 envelope (see the spec). 400: missing or invalid payload, key generation incomplete, payload for another wallet; 403: wallet claimed; 404; 409: already migrated; 413: payload over 64 KB.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: MigrateShareBody,
        response: {
          200: ok(Wallet, 'The wallet, which now signs over REST.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors(
            'WALLET_NOT_FOUND',
            'WALLET_NOT_READY',
            'WALLET_CLAIMED',
            'SHARE_ALREADY_MIGRATED',
            'INVALID_PAYLOAD',
            'PAYLOAD_WALLET_MISMATCH',
            'ENCLAVE_UNAVAILABLE',
            'ENCLAVE_TIMEOUT',
          ),
        },
      },
    },
    async (req) => migration.migrate(req.principal.projectId, req.params.walletId, req.body.encryptedPayload),
  );
};
