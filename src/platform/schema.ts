/**
 * Turns the issues of a platform options schema (valibot, like the kit's own
 * `src/options`) into one `PlatformOptionsError` whose message names every
 * setting at fault: the option path, or the CLI flag / environment variable it
 * came from. Unknown keys get the kit's "did you mean" suggestion.
 */
import * as v from 'valibot';
import {
  type AnySchema,
  PARSE_CONFIG,
  type SettingNames,
  toConfigErrors,
} from '../options/index.js';
import { PLATFORM_INVALID_OPTIONS, PlatformError } from './errors.js';

/** Invalid platform options (`startPlatform`, `setFaults`, `registerApp`'s rateLimit, the CLI). */
export class PlatformOptionsError extends PlatformError {
  /** Each setting at fault, e.g. `port`, `faults.api.errorRate`, `--port`. */
  readonly settings: readonly string[];
  /** One line per setting, each `setting: what is wrong; the fix`. */
  readonly problems: readonly string[];
  constructor(where: string, problems: ReadonlyArray<{ setting: string; message: string }>) {
    const lines = problems.map((p) => p.message);
    super(
      PLATFORM_INVALID_OPTIONS,
      lines.length === 1
        ? `${where}: ${lines[0]}`
        : `${where}: ${lines.length} problems:\n${lines.map((l) => `  - ${l}`).join('\n')}`,
    );
    this.settings = problems.map((p) => p.setting);
    this.problems = lines;
  }
}

/**
 * Validates `input` once; returns the output with defaults filled, or throws
 * PlatformOptionsError. `where` starts the message (`startPlatform`,
 * `store-platform`); `settings` maps option paths to the flag or variable
 * they were read from.
 */
export function parsePlatformOptions<S extends AnySchema>(
  schema: S,
  input: unknown,
  where: string,
  context: { prefix?: string; settings?: SettingNames } = {},
): v.InferOutput<S> {
  const result = v.safeParse(schema, input, PARSE_CONFIG);
  if (result.success) return result.output;
  throw new PlatformOptionsError(where, toConfigErrors(schema, result.issues, context));
}
