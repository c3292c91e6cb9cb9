/**
 * A core handler mounted as an Express route: read through the adapter, call
 * the core, write its answer. No `Request` object is built on the way.
 */
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { CoreHandler } from '../../core/http.js';
import { sendCoreResponse, toCoreRequest } from './adapter.js';

/** The Express route of `core`; a throw reaches the app's error handler (`next(err)`). */
export function expressHandler(core: CoreHandler, fallbackLog: Logger): RequestHandler {
  return async function storeAppCoreRoute(req, res) {
    sendCoreResponse(res, req, await core(toCoreRequest(req, res, fallbackLog)));
  };
}
