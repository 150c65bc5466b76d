import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MAX_MIGRATION_PAYLOAD_BYTES } from '../../../enclave/protocol.ts';
import { errorResponses } from '../../schemas/common.ts';
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
        summary: "The enclave's P-256 public key for share migration",
        security: [{ apiKey: [] }],
        response: { 200: EnclavePublicKey, ...errorResponses(401, 403, 429, 503) },
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
        summary: "Migrate a pre-generated wallet's user share into the service",
        description:
          'ECIES-P256-AES256-SHA256 envelope (see the spec). 400: missing or invalid payload, key generation incomplete, payload for another wallet; 403: wallet claimed; 404; 409: already migrated; 413: payload over 64 KB.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: MigrateShareBody,
        response: { 200: Wallet, ...errorResponses(400, 401, 403, 404, 409, 413, 429, 503) },
      },
    },
    async (req) => migration.migrate(req.principal.projectId, req.params.walletId, req.body.encryptedPayload),
  );
};
