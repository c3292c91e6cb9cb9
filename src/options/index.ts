/**
 * Building blocks of the options schemas (valibot) that every module declares
 * beside its code, and the one place their issues become ConfigErrors.
 *
 * A module's `options.ts` states each option once: type, default and message.
 * `src/config` composes those schemas and overlays the environment; this file
 * knows neither the modules nor process.env.
 */
import * as v from 'valibot';
import { ConfigError, ConfigErrors } from '../errors/index.js';

export { isPlaceholder } from './placeholder.js';

import { isPlaceholder } from './placeholder.js';

/** Any valibot schema, whatever its input and output. */
// biome-ignore lint/suspicious/noExplicitAny: schema walkers accept every schema shape.
export type AnySchema = v.GenericSchema<any, any>;

/** An integer of at least `min` (and at most `max`), in one message. */
export function integer(min: number, max?: number) {
  const message =
    max === undefined
      ? `must be an integer of at least ${min}.`
      : `must be an integer from ${min} to ${max}.`;
  return v.pipe(
    v.number(message),
    v.check((n) => Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max), message),
  );
}

/** `true` or `false`. */
export function boolean() {
  return v.boolean('must be true or false.');
}

/** A function of type T (hooks, verifiers, fetch). */
export function fn<T>(message: string) {
  return v.custom<T>((x) => typeof x === 'function', message);
}

const PATH = /^\/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$/;

/** A URL path starting with "/", normalised without a trailing slash. */
export function urlPath() {
  const message = 'must be a path starting with "/" (no query, no spaces).';
  return v.pipe(
    v.string(message),
    v.check((p) => PATH.test(p) && !p.includes('//'), message),
    v.transform((p) => (p.length > 1 ? p.replace(/\/+$/, '') : p)),
  );
}

const COOKIE_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

/** A cookie name (an RFC 6265 token of at most 64 characters). */
export function cookieName() {
  return v.pipe(
    v.string('must be a valid cookie name.'),
    v.regex(COOKIE_NAME, 'must be a valid cookie name.'),
  );
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * An absolute http(s) URL without credentials, query or fragment, normalised
 * to origin + path without a trailing slash. Plain HTTP only on loopback
 * unless `relaxed` (NODE_ENV development or test).
 */
export function httpUrl(what: string, relaxed: boolean) {
  return v.pipe(
    v.string(`must be a URL string (${what}).`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const fail = (message: string) => {
        addIssue({ message });
        return NEVER;
      };
      let url: URL;
      try {
        url = new URL(dataset.value);
      } catch {
        return fail(`is not an absolute URL; set it to ${what}.`);
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') {
        return fail('must be an https:// URL.');
      }
      if (url.username || url.password) return fail('must not contain credentials.');
      if (url.search || url.hash) return fail('must not contain a query or fragment.');
      if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname) && !relaxed) {
        return fail(
          'must use HTTPS outside loopback (plain http:// is only accepted for localhost/127.0.0.1, or when NODE_ENV is development or test).',
        );
      }
      return url.origin + url.pathname.replace(/\/+$/, '');
    }),
  );
}

/**
 * A setting that may come from an option or the environment and must be set
 * by one of them (an optional key in the options type, required once the
 * environment is overlaid). `notSet` says what to set it to; with
 * `placeholderFix` a value still holding a `.env.example` placeholder is
 * refused before its format is checked, so the message says what happened.
 */
export function required<TIn, TOut>(
  schema: v.GenericSchema<TIn, TOut>,
  notSet: string,
  opts: { placeholderFix?: string } = {},
) {
  return v.pipe(
    v.optional(v.unknown()),
    v.check((x) => x !== undefined, `is not set; ${notSet}`),
    ...(opts.placeholderFix === undefined ? [] : [notPlaceholder(opts.placeholderFix)]),
    schema,
    // Typed as an optional key with a default: optional in the options
    // type, always present (or an issue) in the output.
  ) as unknown as v.OptionalSchema<v.GenericSchema<TIn, TOut>, () => TIn>;
}

/** Refuses a value still holding a `.env.example` placeholder (string or list of strings). */
export function notPlaceholder(fix: string) {
  return v.check<unknown, string>(
    (x) =>
      !(Array.isArray(x) ? x : typeof x === 'string' ? x.split(',') : []).some(
        (item) => typeof item === 'string' && isPlaceholder(item),
      ),
    `still holds the placeholder from .env.example; ${fix}`,
  );
}

/** A list given as an array or as one comma-separated string; blanks and repeats dropped. */
export function commaList(message: string) {
  return v.pipe(
    v.union([v.string(), v.custom<readonly string[]>(Array.isArray)], message),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const raw = dataset.value;
      const parts = typeof raw === 'string' ? raw.split(',') : raw;
      const out: string[] = [];
      for (const [i, part] of parts.entries()) {
        if (typeof part !== 'string') {
          addIssue({ message: `entry #${i + 1} is not a string; ${message}` });
          return NEVER;
        }
        const s = part.trim();
        if (s !== '' && !out.includes(s)) out.push(s);
      }
      return out;
    }),
  );
}

/** Where each option path came from when it was read from the environment. */
export type SettingNames = ReadonlyMap<string, string>;

/**
 * Runs `schema` over `input`; returns the output, or throws one ConfigError
 * (or ConfigErrors for several) naming each setting: the environment variable
 * when the value came from there, else the option path under `prefix`.
 */
export function parseOptions<S extends AnySchema>(
  schema: S,
  input: unknown,
  context: { prefix?: string; settings?: SettingNames } = {},
): v.InferOutput<S> {
  const result = v.safeParse(schema, input, PARSE_CONFIG);
  if (result.success) return result.output;
  const problems = toConfigErrors(schema, result.issues, context);
  throw problems.length === 1 ? problems[0]! : new ConfigErrors(problems);
}

type Issue = v.BaseIssue<unknown>;

function describe(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  return typeof input === 'object' ? 'an object' : `a ${typeof input}`;
}

/**
 * Every issue collected, and a message for the few a schema leaves to
 * valibot: its default would echo the value, which may be a secret.
 */
export const PARSE_CONFIG: v.Config<Issue> = {
  abortEarly: false,
  message: (issue) =>
    issue.expected === 'Object'
      ? `must be an object of options, not ${describe(issue.input)}.`
      : `must be ${issue.expected ?? 'something else'}, not ${describe(issue.input)}.`,
};

/** One ConfigError per setting (the first issue of each), unknown keys with a suggestion. */
export function toConfigErrors(
  root: AnySchema,
  issues: readonly Issue[],
  context: { prefix?: string; settings?: SettingNames } = {},
): ConfigError[] {
  const prefix = context.prefix ? `${context.prefix}.` : '';
  const catalog = optionPaths(root);
  const seen = new Set<string>();
  const out: ConfigError[] = [];
  for (const issue of flatten(issues, [], catalog)) {
    const setting = settingFor(issue.keys, prefix, context.settings);
    if (seen.has(setting)) continue;
    seen.add(setting);
    out.push(
      new ConfigError(
        setting,
        issue.unknownKey ? unknownKeyMessage(issue.keys, catalog, prefix) : issue.message,
      ),
    );
  }
  return out;
}

interface FlatIssue {
  keys: Key[];
  message: string;
  unknownKey: boolean;
  /** A key the branch requires and the input lacks. */
  missingKey: boolean;
}

function isUnknownKey(issue: Issue): boolean {
  return issue.kind === 'schema' && issue.type === 'strict_object' && issue.expected === 'never';
}

function isMissingKey(issue: Issue): boolean {
  return (
    issue.kind === 'schema' &&
    issue.type === 'strict_object' &&
    issue.expected !== 'never' &&
    issue.input === undefined &&
    issue.path?.at(-1)?.origin === 'key'
  );
}

type Key = string | number;

function keysOf(issue: Issue): Key[] {
  return (issue.path ?? []).map((p) => (typeof p.key === 'number' ? p.key : String(p.key)));
}

/** `['oauth', 'scopes', 2]` → `oauth.scopes[2]`. */
function joinKeys(keys: readonly Key[]): string {
  return keys.reduce<string>(
    (path, k) => (typeof k === 'number' ? `${path}[${k}]` : path === '' ? k : `${path}.${k}`),
    '',
  );
}

/**
 * Unions of objects (mutually exclusive modes) report what their branches
 * found: keys of two different branches mean two modes were mixed, and the
 * union's own message says so; otherwise a bad value wins over the keys each
 * branch does not know. Unions of plain values keep their own message.
 */
function flatten(issues: readonly Issue[], base: Key[], catalog: Set<string>): FlatIssue[] {
  const out: FlatIssue[] = [];
  for (const issue of issues) {
    const keys = [...base, ...keysOf(issue)];
    const subs = issue.type === 'union' ? issue.issues : undefined;
    if (subs?.some((s) => (s.path?.length ?? 0) > 0)) {
      const inner = flatten(subs, keys, catalog);
      const mixed = new Set(
        inner
          .filter((f) => f.unknownKey && catalog.has(f.keys.join('.')))
          .map((f) => f.keys.join('.')),
      );
      // A key only another branch requires is no news when a value is wrong.
      const values = inner.filter((f) => !f.unknownKey && !f.missingKey);
      if (mixed.size >= 2) {
        out.push({ keys, message: issue.message, unknownKey: false, missingKey: false });
      } else {
        const keysOnly = inner.filter((f) => !f.missingKey);
        out.push(...(values.length > 0 ? values : keysOnly.length > 0 ? keysOnly : inner));
      }
      continue;
    }
    out.push({
      keys,
      message: issue.message,
      unknownKey: isUnknownKey(issue),
      missingKey: isMissingKey(issue),
    });
  }
  return out;
}

function settingFor(
  keys: readonly Key[],
  prefix: string,
  settings: SettingNames | undefined,
): string {
  // The longest option path read from the environment names the variable
  // (`oauth.scopes` → STORE_APP_SCOPES, also for `oauth.scopes[2]`).
  for (let n = keys.length; settings && n > 0; n--) {
    const name = settings.get(prefix + joinKeys(keys.slice(0, n)));
    if (name !== undefined) return name;
  }
  return prefix + joinKeys(keys);
}

/** Every option path the schema knows, e.g. `session`, `session.secret`, `client.retries.max`. */
export function optionPaths(schema: AnySchema): Set<string> {
  const out = new Set<string>();
  const walk = (s: unknown, prefix: string) => {
    const node = s as {
      entries?: Record<string, unknown>;
      wrapped?: unknown;
      options?: unknown[];
      pipe?: unknown[];
    };
    if (node.wrapped) walk(node.wrapped, prefix);
    if (Array.isArray(node.options)) for (const o of node.options) walk(o, prefix);
    if (Array.isArray(node.pipe)) {
      for (const p of node.pipe.slice(1))
        if ((p as { kind?: string }).kind === 'schema') walk(p, prefix);
    }
    if (node.entries) {
      for (const [key, child] of Object.entries(node.entries)) {
        const path = prefix ? `${prefix}.${key}` : key;
        out.add(path);
        walk(child, path);
      }
    }
  };
  walk(schema, '');
  return out;
}

function unknownKeyMessage(keys: readonly Key[], catalog: Set<string>, prefix: string): string {
  const key = String(keys[keys.length - 1] ?? '');
  const parent = joinKeys(keys.slice(0, -1));
  const siblings = [...catalog].filter((p) =>
    parent === ''
      ? !p.includes('.')
      : p.startsWith(`${parent}.`) && !p.slice(parent.length + 1).includes('.'),
  );
  const siblingNames = siblings.map((p) => p.slice(parent === '' ? 0 : parent.length + 1));
  const near = key.length > 64 ? undefined : closest(key, siblingNames);
  if (near !== undefined)
    return `is not an option; did you mean \`${prefix}${parent ? `${parent}.` : ''}${near}\`?`;
  // A known option in the wrong place: `secret` at the top is `session.secret`.
  const elsewhere = [...catalog].filter((p) => {
    const last = p.slice(p.lastIndexOf('.') + 1);
    return key.length <= 64 && distance(last.toLowerCase(), key.toLowerCase()) <= 1;
  });
  if (elsewhere.length > 0) {
    const list = elsewhere
      .sort((a, b) => a.split('.').length - b.split('.').length)
      .slice(0, 3)
      .map((p) => `\`${prefix}${p}\``)
      .join(' or ');
    return `is not an option here; did you mean ${list}?`;
  }
  return `is not an option; remove it. Options here: ${siblingNames.join(', ')}.`;
}

/** The candidate nearest to `key` (case-insensitive edit distance ≤ 2, less for short names), if any. */
export function closest(key: string, candidates: readonly string[]): string | undefined {
  const k = key.toLowerCase();
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = distance(k, c.toLowerCase());
    const limit = Math.min(2, Math.max(1, Math.floor(c.length / 3)));
    if (d <= limit && d < bestScore) {
      best = c;
      bestScore = d;
    }
  }
  return best;
}

/** Levenshtein distance with adjacent transpositions (`sesion`/`session` = 1). */
export function distance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      const prev = d[i - 1]!;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
      }
    }
  }
  return d[a.length]![b.length]!;
}
