/** Express 4 is refused at start with the fix (see src/http/express-version.ts for why). */
import { describe, expect, it } from 'vitest';
import {
  checkExpressVersion,
  EXPRESS_UNSUPPORTED,
  ExpressVersionError,
  installedExpressVersion,
} from '../../src/shells/express/express-version.js';

describe('Express version check', () => {
  it('refuses express@4 with a message naming the version and the fix', () => {
    let error: unknown;
    try {
      checkExpressVersion('4.21.2');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ExpressVersionError);
    expect((error as ExpressVersionError).code).toBe(EXPRESS_UNSUPPORTED);
    expect((error as Error).message).toContain('express@4.21.2');
    expect((error as Error).message).toContain('npm install express@5');
  });

  it('accepts Express 5 and later, and the installed one', () => {
    expect(() => checkExpressVersion('5.0.0')).not.toThrow();
    expect(() => checkExpressVersion('6.1.0')).not.toThrow();
    expect(() => checkExpressVersion(installedExpressVersion())).not.toThrow();
  });
});
