/** Environment variables backing OAuth options (a leaf module: error messages name them without loading the schema). */
export const OAUTH_ENV = {
  clientId: 'STORE_APP_CLIENT_ID',
  clientSecret: 'STORE_APP_CLIENT_SECRET',
  scopes: 'STORE_APP_SCOPES',
  authUrl: 'STORE_AUTH_URL',
  apiUrl: 'STORE_API_URL',
} as const;
