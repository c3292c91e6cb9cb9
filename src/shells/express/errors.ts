/**
 * The last handler of the kit's router: an error raised inside the kit (the
 * session store failing, a bug) becomes a clear status and a page or JSON
 * body without a stack trace, and is logged. Errors of the host app's own
 * routes never pass through here.
 */
import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { isStorageFailure, STORAGE_RETRY_AFTER_SECONDS } from '../../errors/index.js';
import { recordError } from '../../telemetry/index.js';
import { sendPage } from './pages.js';

export function kitErrorHandler(logger: Logger): ErrorRequestHandler {
  return function storeAppErrorHandler(err: unknown, req, res, next) {
    if (res.headersSent) {
      next(err);
      return;
    }
    const log = res.locals.log ?? logger;
    const storageDown = isStorageFailure(err);
    const status = storageDown ? 503 : 500;
    const code = storageDown ? 'STORAGE_UNAVAILABLE' : 'INTERNAL_ERROR';
    log.error({ err }, storageDown ? 'database unavailable' : 'unexpected error in store-app-kit');
    // Unexpected by definition: without a count here an operator's dashboard never sees them.
    recordError('request', code);
    const message = storageDown
      ? 'The app could not reach its database. Please try again in a moment.'
      : 'Something went wrong in the app. Please try again.';
    if (storageDown) res.set('Retry-After', String(STORAGE_RETRY_AFTER_SECONDS));
    if (req.accepts(['html', 'json']) === 'json') {
      res.status(status).set('Cache-Control', 'no-store').json({ code, message });
      return;
    }
    sendPage(res, {
      status,
      code,
      title: storageDown ? 'Temporarily unavailable' : 'Something went wrong',
      message,
    });
  };
}
