/**
 * The committed artefacts generated from the resource schemas are up to date:
 * `openapi.json` (shipped as `store-app-kit/openapi.json`) and the reference in
 * docs/platform-api-resources.md. Fix a failure with `npm run generate:api`.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi/index.js';
import { renderReference, withReference } from '../../src/openapi/reference.js';

const root = new URL('../../', import.meta.url);

it('openapi.json matches the schemas (npm run generate:api)', () => {
  const shipped = JSON.parse(readFileSync(new URL('openapi.json', root), 'utf8'));
  expect(shipped).toEqual(openApiDocument());
});

it('docs/platform-api-resources.md lists the schemas as they are (npm run generate:api)', () => {
  const page = readFileSync(new URL('docs/platform-api-resources.md', root), 'utf8');
  expect(page).toBe(withReference(page, renderReference(openApiDocument())));
  // Every field of every record is on the page.
  const schemas = openApiDocument().components.schemas as Record<
    string,
    { properties?: Record<string, unknown> }
  >;
  for (const [name, schema] of Object.entries(schemas)) {
    expect(page).toContain(`### ${name}\n`);
    for (const field of Object.keys(schema.properties ?? {})) {
      expect(page, `${name}.${field}`).toContain(`| \`${field}\` |`);
    }
  }
});
