// Preloaded with `node --import`: records every module URL the process resolves
// into $RECORD_IMPORTS, and makes the packages named in $HIDE_PACKAGES fail to
// resolve exactly as an uninstalled package does (ERR_MODULE_NOT_FOUND).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
const file = process.env.RECORD_IMPORTS;
const hidden = (process.env.HIDE_PACKAGES ?? '').split(',').filter(Boolean);
export async function resolve(specifier, context, next) {
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
  if (hidden.includes(name)) {
    const err = new Error("Cannot find package '" + name + "' imported from " + context.parentURL);
    err.code = 'ERR_MODULE_NOT_FOUND';
    throw err;
  }
  const r = await next(specifier, context);
  if (file) appendFileSync(file, r.url + '\\n');
  return r;
}`)}`,
);
