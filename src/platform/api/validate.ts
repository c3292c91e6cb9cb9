/**
 * Request body validation against the resource schemas of `src/schemas/`
 * (the same objects the client's types and the OpenAPI document come from).
 * Every bad field is collected (with a path such as `items[2].quantity`) so a
 * 422 names them all at once. Unknown fields are dropped, as the document asks
 * clients and servers to ignore them.
 */
import * as v from 'valibot';
import { type ErrorDetail, invalid } from './http.js';

export { isDateTime, LONG, MAX_ITEMS, SHORT } from '../../schemas/fields.js';

type BodySchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

const partials = new WeakMap<BodySchema, v.GenericSchema>();

function pathOf(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = item.key;
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}

function messageOf(issue: v.BaseIssue<unknown>): string {
  if (issue.kind === 'schema' && issue.input === undefined) return 'is required';
  if (issue.kind === 'schema' && issue.input === null) return 'must not be null';
  return issue.message;
}

/**
 * Validates a request body against `schema`; throws 422 listing every bad field.
 * `partial` (updates) makes every top-level field optional.
 */
export function validateBody<T = Record<string, unknown>>(
  schema: BodySchema,
  body: unknown,
  options: { partial?: boolean } = {},
): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid([{ field: 'body', message: 'must be a JSON object' }]);
  }
  let effective: v.GenericSchema = schema;
  if (options.partial) {
    effective = partials.get(schema) ?? v.partial(schema);
    partials.set(schema, effective);
  }
  const result = v.safeParse(effective, body, { abortPipeEarly: true });
  if (result.success) return result.output as T;
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const issue of result.issues) {
    const field = pathOf(issue) || 'body';
    // One message per field, the first (as a person would fix them).
    if (seen.has(field)) continue;
    seen.add(field);
    details.push({ field, message: messageOf(issue) });
  }
  throw invalid(details);
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
