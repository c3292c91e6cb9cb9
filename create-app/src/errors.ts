/**
 * create-store-app ships on its own (no dependency on store-app-kit), so it has
 * its own small error class mirroring the kit's: a stable `code` callers and
 * tests branch on, and a message that says what to do.
 */
export const INVALID_NAME = 'INVALID_NAME' as const;
export const TARGET_NOT_EMPTY = 'TARGET_NOT_EMPTY' as const;
export const UNKNOWN_TEMPLATE = 'UNKNOWN_TEMPLATE' as const;
export const INVALID_ARGUMENT = 'INVALID_ARGUMENT' as const;
export const TEMPLATES_MISSING = 'TEMPLATES_MISSING' as const;
export const SCAFFOLD_FAILED = 'SCAFFOLD_FAILED' as const;
export const CANCELLED = 'CANCELLED' as const;

export type CreateAppErrorCode =
  | typeof INVALID_NAME
  | typeof TARGET_NOT_EMPTY
  | typeof UNKNOWN_TEMPLATE
  | typeof INVALID_ARGUMENT
  | typeof TEMPLATES_MISSING
  | typeof SCAFFOLD_FAILED
  | typeof CANCELLED;

export class CreateAppError extends Error {
  readonly code: CreateAppErrorCode;
  constructor(code: CreateAppErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CreateAppError';
    this.code = code;
  }
}
