/**
 * The named schemas of each listener: registered with `addSchema`, they are what the routes' `ref()`s point at (the
 * serializer resolves them there) and the `components.schemas` of the listener's OpenAPI document. A route that refers
 * to a schema missing here fails at start-up; a schema here that no route uses is an unused component to the lint.
 */
import type { TSchema } from '@sinclair/typebox';
import { ActorDetail, ActorList, ActorSummary } from './actors.ts';
import {
  ApiKey,
  ApiKeyList,
  ClaimedWallet,
  IpAllowlist,
  ListedApiKey,
  ListedProject,
  MasterKeyStatus,
  PregeneratedWallet,
  Project,
  ProjectList,
  ReleasedHold,
  RotatedKey,
} from './admin.ts';
import {
  AdminApprovalCase,
  AdminApprovalCaseList,
  ApprovalCase,
  ApprovalCaseList,
  AuthorizationScope,
  AuthorizationScopeList,
  ListedAuthorizationScope,
  ProjectUser,
  ProjectUserList,
  Review,
  ScopeAssignment,
  WalletScope,
} from './approvals.ts';
import { ErrorSchema, Pagination } from './common.ts';
import { EvmFeeEstimate, FeeEstimate, SolanaFeeEstimate, TransactionList, TransactionRecord } from './payments.ts';
import {
  KeyPermissions,
  Policy,
  PolicyDocument,
  PolicyList,
  PolicyValidation,
  PolicyVersion,
  PolicyVersionList,
  ProductionReviewRequested,
  PublishedReview,
} from './policies.ts';
import { PolicyUsage, SimulationResult } from './policy-insights.ts';
import {
  BroadcastResult,
  Signature,
  SignedAuthorization,
  SignedTransaction,
  SignTransactionResult,
  SuiSignedTransaction,
  TransferResult,
} from './signature-results.ts';
import { EnclavePublicKey } from './signing.ts';
import { Wallet, WalletList, WalletListItem } from './wallets.ts';
import {
  Delivery,
  DeliveryList,
  Redelivered,
  RotatedWebhookSecret,
  WebhookEndpoint,
  WebhookTestAccepted,
  WebhookView,
} from './webhooks.ts';
import { YieldPosition } from './yield.ts';

export const COMPONENTS: Record<'public' | 'admin', readonly TSchema[]> = {
  public: [
    ErrorSchema,
    Pagination,
    Wallet,
    WalletListItem,
    WalletList,
    Signature,
    SignedTransaction,
    SuiSignedTransaction,
    BroadcastResult,
    SignTransactionResult,
    TransferResult,
    SignedAuthorization,
    EvmFeeEstimate,
    SolanaFeeEstimate,
    PolicyUsage,
    SimulationResult,
    FeeEstimate,
    TransactionRecord,
    TransactionList,
    YieldPosition,
    EnclavePublicKey,
    ApprovalCase,
    ApprovalCaseList,
    Review,
    PolicyDocument,
    Policy,
    PolicyList,
    PolicyVersion,
    PolicyVersionList,
    PolicyValidation,
    ProductionReviewRequested,
  ],
  admin: [
    ErrorSchema,
    Pagination,
    Wallet,
    Project,
    ListedProject,
    ProjectList,
    ApiKey,
    ListedApiKey,
    ApiKeyList,
    RotatedKey,
    IpAllowlist,
    ClaimedWallet,
    PregeneratedWallet,
    MasterKeyStatus,
    WebhookEndpoint,
    WebhookView,
    RotatedWebhookSecret,
    WebhookTestAccepted,
    Delivery,
    DeliveryList,
    Redelivered,
    ActorSummary,
    ActorList,
    ActorDetail,
    ReleasedHold,
    ProjectUser,
    ProjectUserList,
    ListedAuthorizationScope,
    AuthorizationScopeList,
    AuthorizationScope,
    ScopeAssignment,
    WalletScope,
    AdminApprovalCase,
    AdminApprovalCaseList,
    KeyPermissions,
    PublishedReview,
  ],
};
