/**
 * A small declarative body validator: every bad field is collected (with a
 * path such as `items[2].quantity`) so a 422 names them all at once. Unknown
 * fields are dropped, as the document asks clients and servers to ignore them.
 */
import { type ErrorDetail, invalid, isUuid } from './http.js';

/** The contract's field length limits. */
export const SHORT = 255;
export const LONG = 100_000;
export const MAX_ITEMS = 250;

export type Rule =
  | {
      type: 'string';
      required?: boolean;
      nullable?: boolean;
      max?: number;
      min?: number;
      enum?: readonly string[];
      format?: 'email' | 'uuid' | 'datetime' | 'slug' | 'currency' | 'country' | 'url';
    }
  | {
      type: 'number';
      required?: boolean;
      nullable?: boolean;
      min?: number;
      max?: number;
      integer?: boolean;
      /** Money: at most two decimals. */
      money?: boolean;
      /** Excludes `min` itself. */
      exclusiveMin?: boolean;
    }
  | { type: 'boolean'; required?: boolean }
  | { type: 'strings'; required?: boolean; maxItems?: number; max?: number }
  | {
      type: 'object';
      required?: boolean;
      nullable?: boolean;
      schema?: Schema;
      stringValues?: boolean;
    }
  | { type: 'array'; required?: boolean; of: Schema; maxItems?: number; minItems?: number };

export type Schema = Record<string, Rule>;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const CURRENCY = /^[A-Z]{3}$/;
const COUNTRY = /^[A-Z]{2}$/;
const DATETIME =
  /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

export function isDateTime(v: string): boolean {
  return DATETIME.test(v) && !Number.isNaN(Date.parse(v));
}

function isUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

function checkString(rule: Extract<Rule, { type: 'string' }>, v: string): string | null {
  if (rule.min !== undefined && v.length < rule.min) {
    return rule.min === 1 ? 'must not be empty' : `must be at least ${rule.min} characters`;
  }
  const max = rule.max ?? SHORT;
  if (v.length > max) return `must be at most ${max} characters`;
  if (rule.enum && !rule.enum.includes(v)) return `must be one of ${rule.enum.join(', ')}`;
  switch (rule.format) {
    case 'email':
      return EMAIL.test(v) ? null : 'must be an e-mail address';
    case 'uuid':
      return isUuid(v) ? null : 'must be a uuid';
    case 'datetime':
      return isDateTime(v) ? null : 'must be an ISO 8601 date or timestamp';
    case 'slug':
      return SLUG.test(v) ? null : 'must be lowercase letters, digits and single hyphens';
    case 'currency':
      return CURRENCY.test(v) ? null : 'must be a three-letter uppercase currency code';
    case 'country':
      return COUNTRY.test(v) ? null : 'must be a two-letter uppercase country code';
    case 'url':
      return isUrl(v) ? null : 'must be an http or https URL';
    default:
      return null;
  }
}

function checkValue(rule: Rule, v: unknown, path: string, out: ErrorDetail[]): unknown {
  const fail = (message: string) => {
    out.push({ field: path, message });
    return undefined;
  };
  if (v === null) {
    if ('nullable' in rule && rule.nullable) return null;
    return fail('must not be null');
  }
  switch (rule.type) {
    case 'string': {
      if (typeof v !== 'string') return fail('must be a string');
      const msg = checkString(rule, v);
      return msg ? fail(msg) : v;
    }
    case 'number': {
      if (typeof v !== 'number' || !Number.isFinite(v)) return fail('must be a number');
      if (rule.integer && !Number.isInteger(v)) return fail('must be an integer');
      if (rule.money && Math.abs(Math.round(v * 100) - v * 100) > 1e-6) {
        return fail('must have at most two decimals');
      }
      if (rule.min !== undefined && (rule.exclusiveMin ? v <= rule.min : v < rule.min)) {
        return fail(`must be ${rule.exclusiveMin ? 'greater than' : 'at least'} ${rule.min}`);
      }
      if (rule.max !== undefined && v > rule.max) return fail(`must be at most ${rule.max}`);
      if (!Number.isSafeInteger(Math.round(v * 100))) return fail('is too large');
      return v;
    }
    case 'boolean':
      return typeof v === 'boolean' ? v : fail('must be true or false');
    case 'strings': {
      if (!Array.isArray(v)) return fail('must be an array of strings');
      const maxItems = rule.maxItems ?? MAX_ITEMS;
      if (v.length > maxItems) return fail(`must have at most ${maxItems} entries`);
      const max = rule.max ?? SHORT;
      let ok = true;
      v.forEach((s, i) => {
        if (typeof s !== 'string') {
          out.push({ field: `${path}[${i}]`, message: 'must be a string' });
          ok = false;
        } else if (s.length > max) {
          out.push({ field: `${path}[${i}]`, message: `must be at most ${max} characters` });
          ok = false;
        }
      });
      return ok ? v : undefined;
    }
    case 'object': {
      if (typeof v !== 'object' || Array.isArray(v)) return fail('must be an object');
      if (rule.schema) return checkObject(rule.schema, v as Record<string, unknown>, path, out);
      if (rule.stringValues) {
        let ok = true;
        for (const [k, s] of Object.entries(v as Record<string, unknown>)) {
          if (k.length > SHORT || typeof s !== 'string' || s.length > SHORT) {
            out.push({
              field: `${path}.${k}`,
              message: 'must be a string of at most 255 characters',
            });
            ok = false;
          }
        }
        return ok ? v : undefined;
      }
      return v;
    }
    case 'array': {
      if (!Array.isArray(v)) return fail('must be an array');
      const maxItems = rule.maxItems ?? MAX_ITEMS;
      if (v.length > maxItems) return fail(`must have at most ${maxItems} entries`);
      if (rule.minItems !== undefined && v.length < rule.minItems) {
        return fail(`must have at least ${rule.minItems} entries`);
      }
      const before = out.length;
      const result = v.map((item, i) => {
        if (typeof item !== 'object' || item === null || Array.isArray(item)) {
          out.push({ field: `${path}[${i}]`, message: 'must be an object' });
          return undefined;
        }
        return checkObject(rule.of, item as Record<string, unknown>, `${path}[${i}]`, out);
      });
      return out.length === before ? result : undefined;
    }
  }
}

function checkObject(
  schema: Schema,
  input: Record<string, unknown>,
  prefix: string,
  out: ErrorDetail[],
  partial = false,
): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, rule] of Object.entries(schema)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const v = Object.hasOwn(input, key) ? input[key] : undefined;
    if (v === undefined) {
      if (rule.required && !partial) out.push({ field: path, message: 'is required' });
      continue;
    }
    const checked = checkValue(rule, v, path, out);
    if (checked !== undefined) result[key] = checked;
  }
  return result;
}

/**
 * Validates a request body against `schema`; throws 422 listing every bad field.
 * `partial` (updates) ignores `required`.
 */
export function validateBody<T = Record<string, unknown>>(
  schema: Schema,
  body: unknown,
  options: { partial?: boolean } = {},
): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid([{ field: 'body', message: 'must be a JSON object' }]);
  }
  const out: ErrorDetail[] = [];
  const result = checkObject(schema, body as Record<string, unknown>, '', out, options.partial);
  if (out.length > 0) throw invalid(out);
  return result as T;
}

/** Lowercase, hyphen-separated slug of a title (`My Product!` → `my-product`). */
export function slugify(title: string): string {
  const s = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200)
    .replace(/-+$/, '');
  return s || 'item';
}
