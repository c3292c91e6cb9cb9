/**
 * Codes, access and refresh tokens: issued in clear once, stored as SHA-256
 * hashes. Access-token lookups are on every API request, so a Map keyed by hash
 * sits in front of SQLite and is updated on every revocation.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { AppRegistry } from '../apps.js';
import type { Clock } from '../clock.js';
import { randomToken, sha256Hex } from '../crypto.js';
import { platformAuthCodes, platformInstallations, platformTokens } from '../db/auth-schema.js';
import type { PlatformDb } from '../db/index.js';
import type { ResolvedPlatformOptions } from '../options.js';

export interface AccessTokenInfo {
  appId: string;
  clientId: string;
  storeId: string;
  scopes: readonly string[];
  /** Unix seconds. */
  expiresAt: number;
  revoked: boolean;
}

export type AccessTokenCheck =
  | { ok: true; token: AccessTokenInfo }
  | {
      ok: false;
      code: 'invalid_token' | 'token_expired' | 'token_revoked';
      token?: AccessTokenInfo;
    };

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  scopes: string[];
  storeId: string;
}

export interface NewCode {
  appId: string;
  storeId: string;
  redirectUri: string;
  scopes: readonly string[];
  codeChallenge: string;
}

export type CodeRedemption =
  | { ok: true; codeHash: string; appId: string; storeId: string; scopes: string[] }
  | { ok: false; reason: string };

export type RefreshResult = { ok: true; tokens: IssuedTokens } | { ok: false; reason: string };

export interface TokenService {
  createCode(input: NewCode): string;
  /**
   * Checks and consumes a code. A reused code answers invalid_grant and leaves
   * tokens unchanged (the document); with `revokeOnCodeReplay` it also revokes
   * what the code issued (RFC 6749 §4.1.2).
   */
  redeemCode(input: {
    code: string;
    appId: string;
    redirectUri: string;
    verify: (challenge: string) => boolean;
  }): CodeRedemption;
  /** Issues a fresh pair for an install; previous tokens of that app and store are revoked. */
  issueForInstall(input: {
    appId: string;
    storeId: string;
    scopes: string[];
    codeHash: string;
  }): IssuedTokens;
  /**
   * Installs the app on many stores in one transaction, as if each store's
   * code exchange had just happened (no code, no HTTP): for seeding benches
   * and tests with thousands of installed stores.
   */
  issueForInstalls(input: {
    appId: string;
    storeIds: readonly string[];
    scopes: string[];
  }): IssuedTokens[];
  refresh(input: { refreshToken: string; appId: string; scope?: string[] }): RefreshResult;
  checkAccessToken(token: string): AccessTokenCheck;
  /** Revokes every token of the app for the store; returns how many were active. */
  revokeAppStore(appId: string, storeId: string): number;
  isInstalled(appId: string, storeId: string): boolean;
  installations(filter?: { storeId?: string; appId?: string }): Array<{
    appId: string;
    storeId: string;
    scopes: string[];
    installedAt: Date;
  }>;
  /** Marks the installation removed and voids its codes not yet exchanged. */
  markUninstalled(appId: string, storeId: string): boolean;
}

export function createTokenService(deps: {
  db: PlatformDb;
  clock: Clock;
  apps: AppRegistry;
  options: ResolvedPlatformOptions;
}): TokenService {
  const { db, clock, apps, options } = deps;
  // token hash → info; negative entries are not cached so newly issued tokens are always found.
  const cache = new Map<string, AccessTokenInfo>();
  const MAX_CACHE = 50_000;

  // The refresh grant's statements, prepared once: it is the platform's hottest write path
  // (every installed store of every app, daily), and building the SQL each time cost more than
  // running it (issue 33: 100,000 refreshes due at once).
  const byHash = db
    .select()
    .from(platformTokens)
    .where(eq(platformTokens.tokenHash, sql.placeholder('hash')))
    .prepare();
  const claimRotation = db
    .update(platformTokens)
    .set({ rotatedAt: sql`${sql.placeholder('now')}` })
    .where(
      and(eq(platformTokens.tokenHash, sql.placeholder('hash')), isNull(platformTokens.rotatedAt)),
    )
    .prepare();
  const spendGrace = db
    .update(platformTokens)
    .set({ graceUsed: 1 })
    .where(
      and(eq(platformTokens.tokenHash, sql.placeholder('hash')), eq(platformTokens.graceUsed, 0)),
    )
    .prepare();
  const row = (p: 'a' | 'r', kind: 'access' | 'refresh') => ({
    id: sql.placeholder(`${p}Id`),
    tokenHash: sql.placeholder(`${p}Hash`),
    kind,
    appId: sql.placeholder('appId'),
    storeId: sql.placeholder('storeId'),
    scopes: sql.placeholder('scopes'),
    expiresAt: sql.placeholder(`${p}ExpiresAt`),
    codeHash: sql.placeholder('codeHash'),
    createdAt: sql.placeholder('now'),
  });
  // Both tokens of a pair in one statement.
  const insertPair = db
    .insert(platformTokens)
    .values([row('a', 'access'), row('r', 'refresh')])
    .prepare();

  function revokeWhere(rows: Array<{ tokenHash: string; kind: string }>): void {
    for (const r of rows) {
      const hit = cache.get(r.tokenHash);
      if (hit) hit.revoked = true;
    }
  }

  function revokeAppStore(appId: string, storeId: string): number {
    const now = clock.nowSeconds();
    const rows = db
      .update(platformTokens)
      .set({ revokedAt: now })
      .where(
        and(
          eq(platformTokens.appId, appId),
          eq(platformTokens.storeId, storeId),
          isNull(platformTokens.revokedAt),
        ),
      )
      .returning({ tokenHash: platformTokens.tokenHash, kind: platformTokens.kind })
      .all();
    revokeWhere(rows);
    return rows.length;
  }

  function issue(
    appId: string,
    storeId: string,
    scopes: string[],
    codeHash: string | null,
  ): IssuedTokens {
    const now = clock.nowSeconds();
    const accessToken = `spat_${randomToken(32)}`;
    const refreshToken = `sprt_${randomToken(32)}`;
    insertPair.run({
      aId: randomUUID(),
      aHash: sha256Hex(accessToken),
      aExpiresAt: now + options.accessTokenTtlSeconds,
      rId: randomUUID(),
      rHash: sha256Hex(refreshToken),
      rExpiresAt: now + options.refreshTokenTtlSeconds,
      appId,
      storeId,
      scopes: scopes.join(','),
      codeHash,
      now,
    });
    return { accessToken, refreshToken, expiresIn: options.accessTokenTtlSeconds, scopes, storeId };
  }

  function install(appId: string, storeId: string, scopes: string[], codeHash: string | null) {
    revokeAppStore(appId, storeId);
    const now = clock.nowSeconds();
    db.insert(platformInstallations)
      .values({ id: randomUUID(), appId, storeId, scopes: scopes.join(','), installedAt: now })
      .onConflictDoUpdate({
        target: [platformInstallations.appId, platformInstallations.storeId],
        set: { scopes: scopes.join(','), installedAt: now, uninstalledAt: null },
      })
      .run();
    return issue(appId, storeId, scopes, codeHash);
  }

  /** The refresh grant inside its transaction (see `refresh`). */
  function refreshIn(
    hash: string,
    refreshToken: string,
    appId: string,
    scope: string[] | undefined,
  ): RefreshResult {
    const row = byHash.get({ hash });
    if (row?.kind !== 'refresh' || row.appId !== appId) {
      return { ok: false, reason: 'unknown refresh token' };
    }
    const now = clock.nowSeconds();
    if (row.revokedAt !== null) return { ok: false, reason: 'refresh token revoked' };
    if (now >= row.expiresAt) return { ok: false, reason: 'refresh token expired' };
    const granted = row.scopes.split(',').filter(Boolean);
    let scopes = granted;
    if (scope !== undefined && scope.length > 0) {
      if (!scope.every((s) => granted.includes(s))) {
        return { ok: false, reason: 'scope exceeds the granted scopes' };
      }
      scopes = scope;
    }
    if (!options.refreshTokenRotation) {
      const tokens = issue(row.appId, row.storeId, scopes, row.codeHash);
      // Without rotation the new pair's refresh token is discarded and the presented one kept.
      db.update(platformTokens)
        .set({ revokedAt: now })
        .where(eq(platformTokens.tokenHash, sha256Hex(tokens.refreshToken)))
        .run();
      return { ok: true, tokens: { ...tokens, refreshToken } };
    }
    if (row.rotatedAt === null) {
      const claimed = claimRotation.run({ hash, now });
      if (claimed.changes === 1)
        return { ok: true, tokens: issue(row.appId, row.storeId, scopes, row.codeHash) };
    }
    // Already rotated: one more use inside the grace period (an app that crashed
    // before storing the previous response), then never again.
    const rotatedAt = row.rotatedAt ?? now;
    if (now - rotatedAt > options.refreshGraceSeconds) {
      return { ok: false, reason: 'refresh token was rotated' };
    }
    const spent = spendGrace.run({ hash });
    if (spent.changes !== 1) return { ok: false, reason: 'refresh token was rotated' };
    return { ok: true, tokens: issue(row.appId, row.storeId, scopes, row.codeHash) };
  }

  return {
    createCode(input) {
      const code = randomToken(32);
      const now = clock.nowSeconds();
      db.insert(platformAuthCodes)
        .values({
          codeHash: sha256Hex(code),
          appId: input.appId,
          storeId: input.storeId,
          redirectUri: input.redirectUri,
          scopes: input.scopes.join(','),
          codeChallenge: input.codeChallenge,
          expiresAt: now + options.codeTtlSeconds,
          createdAt: now,
        })
        .run();
      return code;
    },

    redeemCode({ code, appId, redirectUri, verify }) {
      const codeHash = sha256Hex(code);
      const row = db
        .select()
        .from(platformAuthCodes)
        .where(eq(platformAuthCodes.codeHash, codeHash))
        .get();
      if (!row || row.appId !== appId) return { ok: false, reason: 'unknown authorization code' };
      const now = clock.nowSeconds();
      if (row.usedAt !== null) {
        // The document: "code expired or already used → unchanged, invalid_grant".
        if (!options.revokeOnCodeReplay)
          return { ok: false, reason: 'authorization code already used' };
        // RFC 6749 §4.1.2 (opt-in): a replayed code may mean it leaked; revoke what it issued.
        const revoked = db
          .update(platformTokens)
          .set({ revokedAt: now })
          .where(and(eq(platformTokens.codeHash, codeHash), isNull(platformTokens.revokedAt)))
          .returning({ tokenHash: platformTokens.tokenHash, kind: platformTokens.kind })
          .all();
        revokeWhere(revoked);
        return { ok: false, reason: 'authorization code already used' };
      }
      if (now >= row.expiresAt) return { ok: false, reason: 'authorization code expired' };
      if (row.redirectUri !== redirectUri) {
        return { ok: false, reason: 'redirect_uri differs from the authorization request' };
      }
      if (!verify(row.codeChallenge)) return { ok: false, reason: 'code_verifier does not match' };
      const claimed = db
        .update(platformAuthCodes)
        .set({ usedAt: now })
        .where(and(eq(platformAuthCodes.codeHash, codeHash), isNull(platformAuthCodes.usedAt)))
        .run();
      if (claimed.changes !== 1) return { ok: false, reason: 'authorization code already used' };
      return {
        ok: true,
        codeHash,
        appId: row.appId,
        storeId: row.storeId,
        scopes: row.scopes.split(',').filter(Boolean),
      };
    },

    issueForInstall({ appId, storeId, scopes, codeHash }) {
      return db.transaction(() => install(appId, storeId, scopes, codeHash));
    },

    issueForInstalls({ appId, storeIds, scopes }) {
      return db.transaction(() => storeIds.map((storeId) => install(appId, storeId, scopes, null)));
    },

    refresh({ refreshToken, appId, scope }) {
      const hash = sha256Hex(refreshToken);
      // One write transaction for the lookup, the rotation claim and the new pair: one
      // commit per refresh instead of one per statement (each commit of the in-memory
      // database costs a walk of its page cache, so grows with the stores it holds).
      return db.transaction(() => refreshIn(hash, refreshToken, appId, scope));
    },

    checkAccessToken(token) {
      if (token.length === 0 || token.length > 512) return { ok: false, code: 'invalid_token' };
      const hash = sha256Hex(token);
      let info = cache.get(hash);
      if (!info) {
        const row = db
          .select()
          .from(platformTokens)
          .where(eq(platformTokens.tokenHash, hash))
          .get();
        if (row?.kind !== 'access') return { ok: false, code: 'invalid_token' };
        const app = apps.byId(row.appId);
        if (!app) return { ok: false, code: 'invalid_token' };
        info = {
          appId: row.appId,
          clientId: app.clientId,
          storeId: row.storeId,
          scopes: row.scopes.split(',').filter(Boolean),
          expiresAt: row.expiresAt,
          revoked: row.revokedAt !== null,
        };
        if (cache.size >= MAX_CACHE) cache.clear();
        cache.set(hash, info);
      }
      if (info.revoked) return { ok: false, code: 'token_revoked', token: info };
      if (clock.nowSeconds() >= info.expiresAt)
        return { ok: false, code: 'token_expired', token: info };
      return { ok: true, token: info };
    },

    revokeAppStore,

    isInstalled(appId, storeId) {
      const row = db
        .select({ u: platformInstallations.uninstalledAt })
        .from(platformInstallations)
        .where(
          and(eq(platformInstallations.appId, appId), eq(platformInstallations.storeId, storeId)),
        )
        .get();
      return row !== undefined && row.u === null;
    },

    installations(filter = {}) {
      const conds = [isNull(platformInstallations.uninstalledAt)];
      if (filter.storeId) conds.push(eq(platformInstallations.storeId, filter.storeId));
      if (filter.appId) conds.push(eq(platformInstallations.appId, filter.appId));
      return db
        .select()
        .from(platformInstallations)
        .where(and(...conds))
        .all()
        .map((r) => ({
          appId: r.appId,
          storeId: r.storeId,
          scopes: r.scopes.split(',').filter(Boolean),
          installedAt: new Date(r.installedAt * 1000),
        }));
    },

    markUninstalled(appId, storeId) {
      // A code approved before the uninstall must not reinstall the app behind the merchant's back.
      db.delete(platformAuthCodes)
        .where(
          and(
            eq(platformAuthCodes.appId, appId),
            eq(platformAuthCodes.storeId, storeId),
            isNull(platformAuthCodes.usedAt),
          ),
        )
        .run();
      const res = db
        .update(platformInstallations)
        .set({ uninstalledAt: clock.nowSeconds() })
        .where(
          and(
            eq(platformInstallations.appId, appId),
            eq(platformInstallations.storeId, storeId),
            isNull(platformInstallations.uninstalledAt),
          ),
        )
        .run();
      return res.changes === 1;
    },
  };
}
