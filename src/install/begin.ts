/**
 * `GET {auth.path}` without a framework: checks the install link, leaves the
 * admin iframe when framed, else adds a pending install to the browser's
 * cookie and redirects to the platform's authorize page.
 */
import type { CoreHandler } from '../core/http.js';
import { frameAncestors } from '../core/security-headers.js';
import { isStoreId } from '../core/store-id.js';
import { isStorageFailure } from '../errors/index.js';
import { normalizeRedirectTarget } from '../http/redirect-target.js';
import { type InstallContext, readQuery } from './context.js';
import { INSTALL_ERROR_CODES as E } from './errors.js';
import { breakoutResponse } from './pages.js';

/** The install begin route as a core handler. */
export function createInstallBegin(ctx: InstallContext): CoreHandler {
  const { config } = ctx;
  const ancestors = frameAncestors(config.embedded);
  return async function storeAppInstallBegin(req) {
    const q = readQuery(req);
    if (q === null) {
      return ctx.page({
        status: 400,
        code: E.REQUEST_INVALID,
        title: 'Invalid request',
        message: 'The install link is malformed. Start the install again from the store admin.',
      });
    }
    const storeId = q.store_id ?? null;
    if (storeId !== null && !isStoreId(storeId)) {
      return ctx.page({
        status: 400,
        code: E.STORE_ID_INVALID,
        title: 'Invalid store',
        message:
          'The store id in the install link is not valid. Start the install again from the store admin.',
      });
    }
    const returnTo = normalizeRedirectTarget(q.return_to, config.appUrl);
    const dest = req.header('sec-fetch-dest');
    const inFrame =
      dest === 'iframe' || dest === 'frame' || (dest === undefined && q.embedded === '1');
    if (inFrame) return breakoutResponse(ctx.beginUrlFor(storeId, returnTo), ancestors);
    try {
      return await ctx.authorizeRedirect(await ctx.readPending(req), storeId, returnTo, false);
    } catch (err) {
      if (isStorageFailure(err)) {
        return ctx.storageDown(req.log, err, ctx.beginUrlFor(storeId, returnTo));
      }
      throw err;
    }
  };
}
