/**
 * store-app-kit: build, install and run embedded apps for the Merchant Store
 * Platform. The public surface: `storeApp()`, its option and kit types, and
 * the error classes and codes apps branch on.
 */

export type { AuthenticatedStore } from './authenticated/authenticate.js';
// API client, refresh and authenticated()
export {
  CROSS_SITE_REQUEST,
  LAUNCH_TOKEN_INVALID,
  SCOPES_CHANGED,
  SESSION_LIFETIME_EXCEEDED,
  SESSION_REQUIRED,
  SESSION_TOKEN_EXPIRED,
  SESSION_TOKEN_INVALID,
  SessionTokenError,
} from './authenticated/errors.js';
export type { AuthenticatedOptions } from './authenticated/options.js';
export {
  AbortedError,
  ConflictError,
  InsufficientScopeError,
  NetworkError,
  NotFoundError,
  NotInstalledError,
  RateLimitedError,
  ReauthorizationRequiredError,
  RedirectRefusedError,
  ResponseInvalidError,
  StoreApiError,
  TimeoutError,
  TokenExpiredError,
  TokenRevokedError,
  ValidationError,
} from './client/errors.js';
export type { CallOptions, Listable, ListFn, StoreApiClient } from './client/index.js';
export type { ApiTier, ClientOptions, RetryOptions } from './client/options.js';
// createStoreClient itself is on store-app-kit/client: importing it here would load the
// transport (and @opentelemetry/api) with the main entry.
export type { GetToken, StandaloneClientOptions } from './client/standalone.js';
export type { HttpMethod, QueryValue, RequestOptions } from './client/transport.js';
export type * from './client/types.js';
export type { StorageOptions, StoreAppOptions } from './config/index.js';
// Errors
export {
  CONFIG_INVALID,
  ConfigError,
  ConfigErrors,
  DRIVER_MISSING,
  DriverMissingError,
  STORAGE_UNAVAILABLE,
  StorageError,
  StoreAppError,
} from './errors/index.js';
export type { GrantCheck } from './grant/index.js';
export type { HealthOptions, HealthReport } from './health/index.js';
export type {
  EmbeddedOptions,
  LoggerOptions,
  SessionOptions,
  StoreAppLogger,
} from './http/options.js';
export { normalizeRedirectTarget } from './http/redirect-target.js';
export { INSTALL_ERROR_CODES, type InstallErrorCode } from './install/errors.js';
export type {
  AfterInstallContext,
  AuthRouteOptions,
  InstallHookContext,
} from './install/options.js';
export type {
  AuthenticatedHandler,
  AuthenticatedLocals,
  CustomStorageStoreAppKit,
  KitInstallations,
  KitMiddleware,
  MysqlDatabase,
  MysqlStoreAppKit,
  PostgresDatabase,
  PostgresStoreAppKit,
  SqliteDatabase,
  SqliteStoreAppKit,
  StoreAppKit,
  StoreAppOptionsWithAdapter,
  StoreAppOptionsWithoutAdapter,
} from './kit.js';
export {
  OAuthError,
  type OAuthErrorCode,
  TOKEN_ENDPOINT_UNAVAILABLE,
  TOKEN_RESPONSE_INVALID,
} from './oauth/errors.js';
export type { OAuthOptions } from './oauth/options.js';
// Webhooks and purge
export type { PurgeFunction, PurgeRunOptions } from './purge/index.js';
export type { PurgeAppOptions } from './purge/options.js';
export {
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  RefreshClientRejectedError,
  RefreshUnavailableError,
} from './refresh/errors.js';
export type { RefreshOptions } from './refresh/options.js';
export { EXPRESS_UNSUPPORTED, ExpressVersionError } from './shells/express/express-version.js';
// storeApp() imports the kit's HTTP and storage graph when called (src/store-app.ts).
export type { SecurityHeadersOptions } from './shells/express/options.js';
export type { FetchHandler, FetchOptions } from './shells/fetch/index.js';
export type {
  ShutdownCallOptions,
  ShutdownOnSignalsOptions,
  ShutdownOptions,
  ShutdownResult,
} from './shutdown/index.js';
export type { Installation, PendingPurge, PurgeCounts, PurgeResult } from './storage/types.js';
export { storeApp } from './store-app.js';
// Webhook values from their leaf modules: the webhooks index also loads the
// receiver, the processor and their telemetry (@opentelemetry/api).
export {
  INVALID_HEADERS,
  INVALID_PAYLOAD,
  MISSING_HEADERS,
  MISSING_SIGNATURE,
  SIGNATURE_MISMATCH,
  TIMESTAMP_OUT_OF_TOLERANCE,
  WEBHOOK_BODY_CONSUMED,
  WEBHOOK_HANDLER_FAILED,
  WebhookHandlerError,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from './webhooks/errors.js';
export type {
  AppUninstalledPayload,
  GenericWebhookPayload,
  WebhookEvent,
  WebhookHandler,
  WebhookHandlerContext,
  WebhookHeaderNames,
  WebhookRegistry,
  WebhookTopics,
  WebhookVerifier,
  WebhookVerifyInput,
} from './webhooks/index.js';
export type { WebhookOptions } from './webhooks/options.js';
export { keepRawBody } from './webhooks/raw-body.js';
export { type VerifiedDelivery, verify, verifySignature } from './webhooks/verify.js';
