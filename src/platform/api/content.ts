/** Discount codes, content pages and blog posts: plain records with unique codes or slugs. */
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { pageCreate, postCreate } from '../../schemas/content.js';
import { type DISCOUNT_SORTS, discountCreate } from '../../schemas/discounts.js';
import {
  conflict,
  fromCents,
  groupScope,
  idParam,
  invalid,
  isUniqueViolation,
  notFound,
  type ResourceDeps,
  stmt,
  storeOf,
  toCents,
} from './http.js';
import { BASE_SORTS, listPage, parsePageQuery, type SortFields } from './pagination.js';
import { slugify, validateBody } from './validate.js';

export { DISCOUNT_TYPES } from '../../schemas/discounts.js';

const DISCOUNT_SORT_COLUMNS: SortFields<(typeof DISCOUNT_SORTS)[number]> = {
  ...BASE_SORTS,
  code: { column: 'code', type: 'text' },
};
const DISCOUNT_COLUMNS =
  'id, code, type, value, min_subtotal_cents, usage_limit, usage_count, active, starts_at, ends_at, created_at, updated_at';

interface DiscountRow {
  id: string;
  code: string;
  type: string;
  value: number;
  min_subtotal_cents: number;
  usage_limit: number | null;
  usage_count: number;
  active: number;
  starts_at: string | null;
  ends_at: string | null;
  created_at: string;
  updated_at: string;
}

// `value` is stored in hundredths: cents for fixed amounts, basis points for percentages.
const toDiscount = (r: DiscountRow) => ({
  id: r.id,
  code: r.code,
  type: r.type,
  value: r.value / 100,
  minSubtotal: fromCents(r.min_subtotal_cents),
  usageLimit: r.usage_limit,
  usageCount: r.usage_count,
  active: r.active === 1,
  startsAt: r.starts_at,
  endsAt: r.ends_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface DiscountInput {
  code?: string;
  type?: string;
  value?: number;
  minSubtotal?: number;
  usageLimit?: number | null;
  active?: boolean;
  startsAt?: string | null;
  endsAt?: string | null;
}

/** Codes are matched case-insensitively, so they are stored uppercase without surrounding spaces. */
const normalizeCode = (code: string) => code.trim().toUpperCase();

function checkDiscount(d: {
  code: string;
  type: string;
  value: number;
  startsAt: string | null;
  endsAt: string | null;
}): void {
  const details = [];
  if (!/^[A-Z0-9_-]+$/.test(d.code)) {
    details.push({ field: 'code', message: 'must be letters, digits, hyphens or underscores' });
  }
  if (d.type === 'percentage' && (d.value <= 0 || d.value > 100)) {
    details.push({ field: 'value', message: 'must be a percentage above 0 and at most 100' });
  }
  if (d.type === 'fixed_amount' && d.value <= 0) {
    details.push({ field: 'value', message: 'must be an amount above 0' });
  }
  if (d.startsAt && d.endsAt && Date.parse(d.endsAt) <= Date.parse(d.startsAt)) {
    details.push({ field: 'endsAt', message: 'must be after startsAt' });
  }
  if (details.length > 0) throw invalid(details);
}

const iso = (v: string | null | undefined) => (v ? new Date(v).toISOString() : null);
const duplicateCode = () => conflict('code', 'A discount with this code already exists');

function discountRow(deps: ResourceDeps, storeId: string, id: string): DiscountRow {
  const row = stmt(
    deps,
    `SELECT ${DISCOUNT_COLUMNS} FROM discounts WHERE id = ? AND store_id = ?`,
  ).get(id, storeId) as DiscountRow | undefined;
  if (!row) throw notFound('Discount');
  return row;
}

export function discountRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const discounts = groupScope('discounts');

  router.get('/discounts', discounts, function listDiscounts(req, res) {
    const page = parsePageQuery(req, DISCOUNT_SORT_COLUMNS);
    const { rows, pagination } = listPage<DiscountRow & Record<string, unknown>>(
      deps,
      { table: 'discounts', columns: DISCOUNT_COLUMNS, scopeValue: storeOf(res) },
      page,
      DISCOUNT_SORT_COLUMNS,
    );
    res.json({ data: rows.map(toDiscount), pagination });
  });

  router.post('/discounts', discounts, function postDiscount(req, res) {
    const storeId = storeOf(res);
    const input = validateBody<DiscountInput>(discountCreate, req.body);
    if (input.value === undefined && input.type !== 'free_shipping') {
      throw invalid([{ field: 'value', message: 'is required' }]);
    }
    const d = {
      code: normalizeCode(input.code!),
      type: input.type!,
      value: input.type === 'free_shipping' ? 0 : input.value!,
      startsAt: iso(input.startsAt),
      endsAt: iso(input.endsAt),
    };
    checkDiscount(d);
    const id = randomUUID();
    const now = deps.clock.now().toISOString();
    try {
      stmt(
        deps,
        `INSERT INTO discounts (${DISCOUNT_COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        d.code,
        d.type,
        toCents(d.value),
        toCents(input.minSubtotal ?? 0),
        input.usageLimit ?? null,
        input.active === false ? 0 : 1,
        d.startsAt,
        d.endsAt,
        now,
        now,
        storeId,
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateCode();
      throw err;
    }
    res.status(201).json(toDiscount(discountRow(deps, storeId, id)));
  });

  router.put('/discounts/:id', discounts, function putDiscount(req, res) {
    const storeId = storeOf(res);
    const id = idParam(req, 'Discount');
    const row = discountRow(deps, storeId, id);
    const input = validateBody<DiscountInput>(discountCreate, req.body, { partial: true });
    const type = input.type ?? row.type;
    const d = {
      code: input.code === undefined ? row.code : normalizeCode(input.code),
      type,
      value: type === 'free_shipping' ? 0 : (input.value ?? row.value / 100),
      startsAt: input.startsAt === undefined ? row.starts_at : iso(input.startsAt),
      endsAt: input.endsAt === undefined ? row.ends_at : iso(input.endsAt),
    };
    checkDiscount(d);
    try {
      stmt(
        deps,
        `UPDATE discounts SET code = ?, type = ?, value = ?, min_subtotal_cents = ?, usage_limit = ?, active = ?, starts_at = ?, ends_at = ?, updated_at = ?
         WHERE id = ?`,
      ).run(
        d.code,
        d.type,
        toCents(d.value),
        input.minSubtotal === undefined ? row.min_subtotal_cents : toCents(input.minSubtotal),
        input.usageLimit === undefined ? row.usage_limit : input.usageLimit,
        input.active === undefined ? row.active : input.active ? 1 : 0,
        d.startsAt,
        d.endsAt,
        deps.clock.now().toISOString(),
        id,
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateCode();
      throw err;
    }
    res.json(toDiscount(discountRow(deps, storeId, id)));
  });

  router.delete('/discounts/:id', discounts, function deleteDiscount(req, res) {
    const result = stmt(deps, 'DELETE FROM discounts WHERE id = ? AND store_id = ?').run(
      idParam(req, 'Discount'),
      storeOf(res),
    );
    if (result.changes === 0) throw notFound('Discount');
    res.status(204).end();
  });

  return router;
}

interface PageRow {
  id: string;
  title: string;
  slug: string;
  body: string;
  published: number;
  author?: string;
  tags?: string;
  published_at?: string | null;
  created_at: string;
  updated_at: string;
}

const toPage = (r: PageRow) => ({
  id: r.id,
  title: r.title,
  slug: r.slug,
  body: r.body,
  published: r.published === 1,
  ...(r.author === undefined
    ? {}
    : {
        author: r.author,
        tags: JSON.parse(r.tags ?? '[]') as string[],
        publishedAt: r.published_at ?? null,
      }),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const PAGE_COLUMNS = 'id, title, slug, body, published, created_at, updated_at';
const POST_COLUMNS =
  'id, title, slug, body, published, author, tags, published_at, created_at, updated_at';

export function contentRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const content = groupScope('content');

  for (const kind of ['pages', 'blog'] as const) {
    const table = kind === 'pages' ? 'pages' : 'blog_posts';
    const columns = kind === 'pages' ? PAGE_COLUMNS : POST_COLUMNS;
    router.get(`/content/${kind}`, content, function listContent(req, res) {
      const page = parsePageQuery(req, BASE_SORTS);
      const { rows, pagination } = listPage<PageRow & Record<string, unknown>>(
        deps,
        { table, columns, scopeValue: storeOf(res) },
        page,
        BASE_SORTS,
      );
      res.json({ data: rows.map(toPage), pagination });
    });
    router.post(`/content/${kind}`, content, function postContent(req, res) {
      const storeId = storeOf(res);
      const input = validateBody<{
        title: string;
        slug?: string;
        body?: string;
        published?: boolean;
        author?: string;
        tags?: string[];
      }>(kind === 'pages' ? pageCreate : postCreate, req.body);
      const id = randomUUID();
      const now = deps.clock.now().toISOString();
      const slug = input.slug ?? slugify(input.title);
      const published = input.published ?? kind === 'pages';
      try {
        if (kind === 'pages') {
          stmt(
            deps,
            `INSERT INTO pages (${PAGE_COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(id, input.title, slug, input.body ?? '', published ? 1 : 0, now, now, storeId);
        } else {
          stmt(
            deps,
            `INSERT INTO blog_posts (${POST_COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            id,
            input.title,
            slug,
            input.body ?? '',
            published ? 1 : 0,
            input.author ?? '',
            JSON.stringify(input.tags ?? []),
            published ? now : null,
            now,
            now,
            storeId,
          );
        }
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw conflict(
            'slug',
            `A ${kind === 'pages' ? 'page' : 'blog post'} with this slug already exists`,
          );
        }
        throw err;
      }
      const row = stmt(deps, `SELECT ${columns} FROM ${table} WHERE id = ?`).get(id) as PageRow;
      res.status(201).json(toPage(row));
    });
  }
  return router;
}
