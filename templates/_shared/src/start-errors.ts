/**
 * How the entry points (`npm start`, `npm run dev`, `npm run migrate`) report a
 * start that failed: the error's code and message as the kit wrote them (the
 * setting and the fix), not Node's report of an uncaught error, whose first
 * lines are a line of compiled code and a caret.
 */

/**
 * `CODE: message` for an error that carries a code (the kit's errors, a setting missing from
 * `.env`, Node's system errors); anything else is a bug in the app's code, and its stack is
 * what helps.
 */
export function describeStartFailure(err: unknown): string {
  if (!(err instanceof Error)) return `Start failed: ${String(err)}`;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return `${code}: ${err.message}`;
  return err.stack ?? err.message;
}

/** Prints `describeStartFailure(err)` to stderr and exits 1. */
export function exitOnStartFailure(err: unknown): never {
  console.error(describeStartFailure(err));
  process.exit(1);
}
