/**
 * The HTTP plumbing shared by every resource group: the API error class and
 * body, JSON body parsing with the contract's statuses, scope checks, the
 * final error handler and a statement cache over the raw SQLite handle.
 */
import type Database from 'better-sqlite3';
import express, {
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { StoreAppError } from '../../errors/index.js';
import type { Clock } from '../clock.js';
import type { PlatformDb } from '../db/index.js';

/** What the resource router and the store functions need. */
export interface ResourceDeps {
  db: PlatformDb;
  clock: Clock;
}

export type ApiErrorCode =
  | 'VALIDATION_ERROR'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INVALID_JSON'
  | 'BAD_REQUEST'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INSUFFICIENT_STOCK'
  | 'INVALID_TRANSITION'
  | 'INTERNAL_ERROR'
  | 'insufficient_scope'
  | 'invalid_token';

export interface ErrorDetail {
  field: string;
  message: string;
}

/** An error that becomes the document's API error body `{error, code, details}`. */
export class ApiError extends StoreAppError<ApiErrorCode> {
  readonly details: ErrorDetail[];
  readonly extra: Record<string, string> | undefined;
  constructor(
    status: number,
    code: ApiErrorCode,
    message: string,
    details: ErrorDetail[] = [],
    extra?: Record<string, string>,
  ) {
    super(code, message, { status });
    this.details = details;
    this.extra = extra;
  }
}

export const notFound = (what: string): ApiError =>
  new ApiError(404, 'NOT_FOUND', `${what} not found`);
export const badRequest = (field: string, message: string): ApiError =>
  new ApiError(400, 'BAD_REQUEST', `Invalid query parameter ${field}: ${message}`, [
    { field, message },
  ]);
export const conflict = (field: string, message: string): ApiError =>
  new ApiError(409, 'CONFLICT', message, [{ field, message }]);
export const invalid = (details: ErrorDetail[]): ApiError =>
  new ApiError(
    422,
    'VALIDATION_ERROR',
    `Validation failed: ${details.map((d) => d.field).join(', ')}`,
    details,
  );

function sendError(res: Response, err: ApiError): void {
  if (err.code === 'insufficient_scope' && err.extra?.requiredScope) {
    res.set(
      'WWW-Authenticate',
      `Bearer error="insufficient_scope", scope="${err.extra.requiredScope}"`,
    );
  }
  res
    .status(err.status ?? 500)
    .json({ error: err.message, code: err.code, details: err.details, ...err.extra });
}

/** The contract's maximum body size. */
export const MAX_BODY_BYTES = 1_048_576;

const jsonParser = express.json({ limit: MAX_BODY_BYTES, strict: false });

/**
 * Parses JSON bodies of POST/PUT: 415 for a body that is not JSON, 400 for
 * malformed JSON, 413 over 1 MB. A request without a body gets `{}`.
 */
export function createBodyParser(): RequestHandler {
  return function resourceBodyParser(req: Request, res: Response, next: NextFunction) {
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return next();
    const length = req.headers['content-length'];
    const hasBody =
      req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (!hasBody) {
      req.body = {};
      return next();
    }
    if (!req.is('application/json') && !req.is('application/*+json')) {
      return sendError(
        res,
        new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json'),
      );
    }
    jsonParser(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (req.body === undefined) req.body = {};
      next();
    });
  };
}

/** Maps parser failures and ApiErrors to responses; anything else to a 500 without details. */
export function createErrorHandler(): ErrorRequestHandler {
  return function resourceErrorHandler(err: unknown, _req, res, _next) {
    if (res.headersSent) return;
    if (err instanceof ApiError) return sendError(res, err);
    const type = (err as { type?: unknown } | null)?.type;
    if (type === 'entity.parse.failed') {
      return sendError(res, new ApiError(400, 'INVALID_JSON', 'Request body is not valid JSON'));
    }
    if (type === 'entity.too.large') {
      return sendError(
        res,
        new ApiError(413, 'PAYLOAD_TOO_LARGE', 'Request body exceeds 1 MB (1,048,576 bytes)'),
      );
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return sendError(
        res,
        new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding or charset'),
      );
    }
    if (type === 'request.aborted' || type === 'request.size.invalid') {
      return sendError(res, new ApiError(400, 'BAD_REQUEST', 'Request body was incomplete'));
    }
    const status = (err as { status?: unknown } | null)?.status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return sendError(res, new ApiError(400, 'BAD_REQUEST', 'Bad request'));
    }
    sendError(res, new ApiError(500, 'INTERNAL_ERROR', 'Internal server error'));
  };
}

/** 404 for any path or method the router does not serve. */
export function createNotFoundHandler(): RequestHandler {
  return function resourceNotFound(_req, res) {
    sendError(res, new ApiError(404, 'NOT_FOUND', 'No such endpoint'));
  };
}

/** The store the calling token belongs to (set by the guard). */
export function storeOf(res: Response): string {
  const auth = res.locals.platformAuth;
  if (!auth) throw new ApiError(401, 'invalid_token', 'Missing or invalid access token');
  return auth.storeId;
}

/**
 * Requires exactly `scope` on the token; no scope implies another (the
 * document names one scope per method and group).
 */
export function requireScope(scope: string): RequestHandler {
  return function scopeCheck(_req, res, next) {
    const auth = res.locals.platformAuth;
    if (!auth) return sendError(res, new ApiError(401, 'invalid_token', 'Missing access token'));
    if (!auth.scopes.includes(scope)) {
      return sendError(
        res,
        new ApiError(403, 'insufficient_scope', `This endpoint requires the ${scope} scope`, [], {
          requiredScope: scope,
        }),
      );
    }
    next();
  };
}

const bodyParser = createBodyParser();

/**
 * The group's read scope for GET/HEAD, its write scope for other methods;
 * then, for writes, the JSON body. Scope comes first so a caller without the
 * scope learns nothing from how its body would have been judged.
 */
export function groupScope(group: string, readOnly = false): RequestHandler {
  const read = requireScope(`read_${group}`);
  const write = readOnly ? read : requireScope(`write_${group}`);
  return function groupScopeCheck(req, res, next) {
    if (req.method === 'GET' || req.method === 'HEAD') return read(req, res, next);
    return write(req, res, (err?: unknown) => (err ? next(err) : bodyParser(req, res, next)));
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);

/** The `:id` path parameter; malformed ids are simply not found. */
export function idParam(req: Request, what: string): string {
  const id = req.params.id;
  if (!isUuid(id)) throw notFound(what);
  return id.toLowerCase();
}

const statementCaches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * The raw better-sqlite3 handle behind the Drizzle instance. Hot paths use
 * cached prepared statements on it directly; `drizzle()` always sets `$client`
 * but `PlatformDb` does not declare it.
 */
export function sqliteOf(deps: ResourceDeps): Database.Database {
  const client = (deps.db as { $client?: Database.Database }).$client;
  if (!client) throw new Error('The platform database has no better-sqlite3 client');
  return client;
}

/** Prepared statements are cached per connection and SQL text. */
export function stmt(deps: ResourceDeps, sql: string): Database.Statement {
  const sqlite = sqliteOf(deps);
  let cache = statementCaches.get(sqlite);
  if (!cache) {
    cache = new Map();
    statementCaches.set(sqlite, cache);
  }
  const cached = cache.get(sql);
  if (cached) return cached;
  const prepared = sqlite.prepare(sql);
  cache.set(sql, prepared);
  return prepared;
}

/**
 * A number that changes whenever any row of the database changes through this
 * connection (SQLite's `total_changes()`). The platform is the database's only
 * writer, so a value computed at one generation is still right while the
 * generation is unchanged.
 */
export function generation(deps: ResourceDeps): number {
  return (stmt(deps, 'SELECT total_changes() AS n').get() as { n: number }).n;
}

const countCaches = new WeakMap<Database.Database, Map<string, { gen: number; n: number }>>();
const MAX_CACHED_COUNTS = 1000;

/**
 * `SELECT count(*)` for list totals, remembered until the next write: a
 * count walks every matching index entry, which dominated list latency on
 * large stores.
 */
export function cachedCount(deps: ResourceDeps, sql: string, params: unknown[]): number {
  const sqlite = sqliteOf(deps);
  let cache = countCaches.get(sqlite);
  if (!cache) {
    cache = new Map();
    countCaches.set(sqlite, cache);
  }
  const key = `${sql}\u0000${JSON.stringify(params)}`;
  const gen = generation(deps);
  const hit = cache.get(key);
  if (hit && hit.gen === gen) return hit.n;
  const n = (stmt(deps, sql).get(...params) as { n: number }).n;
  if (cache.size >= MAX_CACHED_COUNTS) cache.clear();
  cache.set(key, { gen, n });
  return n;
}

export function transaction<T>(deps: ResourceDeps, fn: () => T): T {
  return sqliteOf(deps).transaction(fn)();
}

/** True when a SQLite unique constraint failed. */
export function isUniqueViolation(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE'
  );
}

export const toCents = (n: number): number => Math.round(n * 100);
export const fromCents = (c: number): number => c / 100;
export const nullableCents = (c: number | null): number | null => (c === null ? null : c / 100);

/** Route handler wrapper: synchronous handlers throwing ApiError reach the error handler. */
export type Handler = (req: Request, res: Response) => void;
