/**
 * Building blocks of the resource schemas. Each helper is a valibot schema
 * whose messages are the local platform's 422 `details[].message` texts and
 * whose `metadata` carries what JSON Schema needs for checks valibot cannot
 * express (money, date-time, uuid, url): the validation, the client's types
 * and the OpenAPI document all read the same objects.
 */
import * as v from 'valibot';

/** The contract's field length limits (docs/platform-contract.md). */
export const SHORT = 255;
export const LONG = 100_000;
export const MAX_ITEMS = 250;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const CURRENCY = /^[A-Z]{3}$/;
const COUNTRY = /^[A-Z]{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATETIME =
  /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

export const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && UUID.test(value);

/** An ISO 8601 date (`2026-01-31`) or timestamp with an offset. */
export function isDateTime(value: string): boolean {
  return DATETIME.test(value) && !Number.isNaN(Date.parse(value));
}

function isUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

type Action<T> = v.PipeItem<T, T, v.BaseIssue<unknown>>;
// `v.pipe` is typed for fixed tuples; the helpers build their pipes from options.
const pipe = v.pipe as unknown as <T>(
  schema: v.GenericSchema<T>,
  ...items: Action<T>[]
) => v.GenericSchema<T>;

export type StringFormat = 'email' | 'uuid' | 'datetime' | 'slug' | 'currency' | 'country' | 'url';

const FORMATS: Record<
  StringFormat,
  { message: string; ok: (s: string) => boolean; json: Record<string, unknown> }
> = {
  email: {
    message: 'must be an e-mail address',
    ok: (s) => EMAIL.test(s),
    json: { format: 'email' },
  },
  uuid: { message: 'must be a uuid', ok: (s) => UUID.test(s), json: { format: 'uuid' } },
  datetime: {
    message: 'must be an ISO 8601 date or timestamp',
    ok: isDateTime,
    json: { pattern: DATETIME.source },
  },
  slug: {
    message: 'must be lowercase letters, digits and single hyphens',
    ok: (s) => SLUG.test(s),
    json: { pattern: SLUG.source },
  },
  currency: {
    message: 'must be a three-letter uppercase currency code',
    ok: (s) => CURRENCY.test(s),
    json: { pattern: CURRENCY.source },
  },
  country: {
    message: 'must be a two-letter uppercase country code',
    ok: (s) => COUNTRY.test(s),
    json: { pattern: COUNTRY.source },
  },
  url: { message: 'must be an http or https URL', ok: isUrl, json: { format: 'uri' } },
};

/** A string of at most `max` (default 255) characters, optionally of a format. */
export function str(options: { min?: number; max?: number; format?: StringFormat } = {}) {
  const actions: Action<string>[] = [];
  const { min, max = SHORT, format } = options;
  if (min !== undefined) {
    actions.push(
      v.minLength(
        min,
        min === 1 ? 'must not be empty' : `must be at least ${min} characters`,
      ) as Action<string>,
    );
  }
  actions.push(v.maxLength(max, `must be at most ${max} characters`) as Action<string>);
  if (format) {
    const f = FORMATS[format];
    actions.push(v.check(f.ok, f.message) as Action<string>);
    actions.push(v.metadata(f.json) as unknown as Action<string>);
  }
  return pipe(v.string('must be a string'), ...actions);
}

/** One of `values` (a union type). */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return v.picklist(values, `must be one of ${values.join(', ')}`);
}

/** A finite number; `money` allows at most two decimals (stored as cents). */
export function num(
  options: {
    min?: number;
    max?: number;
    integer?: boolean;
    money?: boolean;
    exclusiveMin?: boolean;
  } = {},
) {
  const actions: Action<number>[] = [];
  if (options.integer) actions.push(v.integer('must be an integer') as Action<number>);
  if (options.money) {
    actions.push(
      v.check(
        (n) => Math.abs(Math.round(n * 100) - n * 100) <= 1e-6,
        'must have at most two decimals',
      ) as Action<number>,
      v.metadata({ multipleOf: 0.01 }) as unknown as Action<number>,
    );
  }
  const { min, max } = options;
  if (min !== undefined) {
    actions.push(
      (options.exclusiveMin
        ? v.gtValue(min, `must be greater than ${min}`)
        : v.minValue(min, `must be at least ${min}`)) as Action<number>,
    );
  }
  if (max !== undefined) actions.push(v.maxValue(max, `must be at most ${max}`) as Action<number>);
  actions.push(
    v.check((n) => Number.isSafeInteger(Math.round(n * 100)), 'is too large') as Action<number>,
  );
  return pipe(v.number('must be a number'), ...actions);
}

export const bool = () => v.boolean('must be true or false');

/** An array of strings (tags): at most 250 entries of at most 255 characters. */
export function strings(options: { maxItems?: number; max?: number } = {}) {
  const maxItems = options.maxItems ?? MAX_ITEMS;
  return v.pipe(
    v.array(str({ max: options.max ?? SHORT }), 'must be an array of strings'),
    v.maxLength(maxItems, `must have at most ${maxItems} entries`),
  );
}

/** An array of objects. */
export function list<T extends v.GenericSchema>(
  of: T,
  options: { maxItems?: number; minItems?: number } = {},
) {
  const maxItems = options.maxItems ?? MAX_ITEMS;
  const actions: Action<v.InferOutput<T>[]>[] = [
    v.maxLength(maxItems, `must have at most ${maxItems} entries`) as Action<v.InferOutput<T>[]>,
  ];
  if (options.minItems !== undefined) {
    actions.push(
      v.minLength(options.minItems, `must have at least ${options.minItems} entries`) as Action<
        v.InferOutput<T>[]
      >,
    );
  }
  return pipe(
    v.array(of, 'must be an array') as unknown as v.GenericSchema<v.InferOutput<T>[]>,
    ...actions,
  ) as v.GenericSchema<v.InferInput<T>[], v.InferOutput<T>[]>;
}

/** An object of the given fields; unknown fields are dropped (the document's versioning rule). */
export function obj<const E extends v.ObjectEntries>(entries: E) {
  return v.object(entries, 'must be an object');
}

/** Option name → value, both short strings (variant options). */
export const stringMap = () =>
  v.record(str(), str(), 'must be an object of strings of at most 255 characters');

/** Free-form JSON object (product metadata). */
export const jsonObject = () => v.record(v.string(), v.unknown(), 'must be an object');

// --- response building blocks (no messages: the platform writes them) ---

/** A uuid in a response. */
export const id = () => v.pipe(v.string(), v.metadata({ format: 'uuid' }));
/** An ISO 8601 timestamp in a response. */
export const timestamp = () => v.pipe(v.string(), v.metadata({ format: 'date-time' }));
/** A money amount in a response: a decimal number with at most two decimals. */
export const money = () => v.pipe(v.number(), v.metadata({ multipleOf: 0.01 }));
export const int = () => v.pipe(v.number(), v.integer());
