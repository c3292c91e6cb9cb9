/**
 * `npm run generate:api`: writes the OpenAPI document the package ships
 * (`openapi.json`) and the generated reference in
 * docs/platform-api-resources.md, both from the resource schemas (src/schemas).
 * test/openapi/generated.test.ts fails when either is out of date.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiDocument } from '../src/openapi/index.js';
import { renderReference, withReference } from '../src/openapi/reference.js';

const root = new URL('..', import.meta.url);
const doc = openApiDocument();
writeFileSync(new URL('openapi.json', root), `${JSON.stringify(doc, null, 2)}\n`);
const pageUrl = new URL('docs/platform-api-resources.md', root);
writeFileSync(pageUrl, withReference(readFileSync(pageUrl, 'utf8'), renderReference(doc)));
process.stdout.write('wrote openapi.json and docs/platform-api-resources.md\n');
