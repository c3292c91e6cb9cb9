/** Content pages and blog posts. */
import * as v from 'valibot';
import { bool, id, LONG, obj, str, strings, timestamp } from './fields.js';

export const pageCreate = obj({
  title: str({ min: 1 }),
  /** Derived from `title` when omitted; a duplicate is 409 CONFLICT. */
  slug: v.optional(str({ format: 'slug' })),
  body: v.optional(str({ max: LONG })),
  /** @default true for pages, false for posts */
  published: v.optional(bool()),
});

export const postCreate = obj({
  ...pageCreate.entries,
  author: v.optional(str()),
  tags: v.optional(strings()),
});

export const page = v.object({
  id: id(),
  title: v.string(),
  slug: v.string(),
  body: v.string(),
  published: v.boolean(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const post = v.object({
  ...page.entries,
  author: v.string(),
  tags: v.array(v.string()),
  publishedAt: v.nullable(v.string()),
});
