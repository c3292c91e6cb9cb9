/**
 * The platform API as an OpenAPI 3.1 document, generated from the resource
 * schemas of `src/schemas/` (JSON Schema 2020-12 through
 * `@valibot/to-json-schema`). The local platform serves it at
 * `/api/v1/openapi.json`; the package ships it as `store-app-kit/openapi.json`.
 * Not on the client's path: only the platform and the generator script load it.
 */
import { type ConversionConfig, toJsonSchema, toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { components, type Endpoint, endpoints } from '../schemas/endpoints.js';
import { sessionInfo } from '../schemas/stores.js';

// biome-ignore lint/suspicious/noExplicitAny: a JSON document
export type OpenApiDocument = Record<string, any>;

const overrideRef = ({ referenceId }: { referenceId: string }) =>
  `#/components/schemas/${referenceId}`;
const config: ConversionConfig = {
  target: 'draft-2020-12',
  // Checks valibot cannot name (money, formats) carry their JSON Schema in `metadata`.
  ignoreActions: ['check'],
  definitions: components,
  overrideRef,
};

/** One operation's schema: named parts become `$ref`s into `components.schemas`. */
const schemaOf = (schema: v.GenericSchema) => {
  const {
    $schema: _s,
    $defs: _d,
    ...json
  } = toJsonSchema(schema, config) as Record<string, unknown>;
  return json;
};

const error = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ApiError' } } },
});

function operation(e: Endpoint) {
  const parameters: unknown[] = [{ $ref: '#/components/parameters/StoreId' }];
  if (e.path.includes('{id}')) {
    parameters.push({
      name: 'id',
      in: 'path',
      required: true,
      schema: { type: 'string', format: 'uuid' },
    });
  }
  if (e.query) {
    const query = schemaOf(e.query) as { properties: Record<string, unknown> };
    for (const [name, schema] of Object.entries(query.properties)) {
      parameters.push({ name, in: 'query', required: false, schema });
    }
  }
  const responses: Record<string, unknown> = {
    [e.status]: e.response
      ? {
          description: e.status === 201 ? 'Created' : 'OK',
          content: { 'application/json': { schema: schemaOf(e.response) } },
        }
      : { description: 'No Content' },
    '400': error('Malformed JSON or a bad query parameter (`INVALID_JSON`, `BAD_REQUEST`)'),
    '401': error('Missing, unknown, expired or revoked token'),
    '403': error('`insufficient_scope` (with `requiredScope`) or `store_mismatch`'),
    '429': error('Rate limited: wait for `Retry-After`'),
  };
  if (e.path.includes('{id}')) responses['404'] = error('Not found (also a malformed id)');
  if (e.body) {
    responses['409'] = error('Conflict: duplicate, invalid transition or insufficient stock');
    responses['413'] = error('Body over 1 MB');
    responses['415'] = error('Body is not JSON');
    responses['422'] = error('Validation failed: `details` lists every invalid field');
  }
  return {
    operationId: e.operation,
    summary: e.summary,
    tags: [e.operation.split('.')[0]],
    security: [{ bearer: [e.scope] }],
    'x-required-scope': e.scope,
    parameters,
    ...(e.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: schemaOf(e.body) } },
          },
        }
      : {}),
    responses,
  };
}

/**
 * The OpenAPI 3.1 document of the resource API and the session check.
 * `authUrl` (the platform's origin) makes the server URLs absolute; without it
 * they are relative (`/api/v1`), as in the shipped `openapi.json`.
 */
export function openApiDocument(options: { authUrl?: string } = {}): OpenApiDocument {
  const origin = options.authUrl?.replace(/\/+$/, '') ?? '';
  const paths: Record<string, Record<string, unknown>> = {};
  for (const e of endpoints) {
    const item = paths[e.path] ?? {};
    item[e.method.toLowerCase()] = operation(e);
    paths[e.path] = item;
  }
  const { $schema: _drop, ...sessionSchema } = toJsonSchema(sessionInfo, {
    target: 'draft-2020-12',
  }) as Record<string, unknown>;
  paths['/oauth/session'] = {
    // On {auth_url}, not {base_url}.
    servers: [{ url: origin || '/', description: '{auth_url}' }],
    get: {
      operationId: 'session',
      summary: 'Session check: what the bearer token grants',
      tags: ['session'],
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: 'OK',
          content: { 'application/json': { schema: sessionSchema } },
        },
        '401': error('`invalid_token`, `token_expired` or `token_revoked`'),
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Merchant Store Platform API',
      version: 'v1',
      description:
        'The resource API as store-app-kit and its local platform implement it. Generated from the ' +
        'resource schemas (src/schemas); choices where the platform document says "not shown" are ' +
        'in docs/platform-contract.md. Clients must ignore fields they do not know.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: `${origin}/api/v1`, description: '{base_url}' }],
    paths,
    components: {
      schemas: toJsonSchemaDefs(components, {
        target: 'draft-2020-12',
        ignoreActions: ['check'],
        overrideRef,
      }),
      parameters: {
        StoreId: {
          name: 'X-Store-Id',
          in: 'header',
          required: true,
          description: 'The store the token belongs to',
          schema: { type: 'string' },
        },
      },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'The app access token of the store (OAuth 2.0 with PKCE)',
        },
      },
    },
  };
}
