/**
 * The authorization page URL with the document's seven required parameters,
 * plus our optional `store_id` extension (docs/platform-contract.md).
 */
export interface AuthorizeUrlInput {
  /** Absolute URL of the authorization page, e.g. `{auth_url}/oauth/authorize`. */
  authorizeUrl: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  state: string;
  codeChallenge: string;
  /** Preselects the store on the consent page; omitted when null. */
  storeId?: string | null;
}

export function buildAuthorizeUrl(input: AuthorizeUrlInput): string {
  const url = new URL(input.authorizeUrl);
  const p = url.searchParams;
  p.set('client_id', input.clientId);
  p.set('redirect_uri', input.redirectUri);
  p.set('scope', input.scopes.join(','));
  p.set('state', input.state);
  p.set('response_type', 'code');
  p.set('code_challenge', input.codeChallenge);
  p.set('code_challenge_method', 'S256');
  if (input.storeId) p.set('store_id', input.storeId);
  return url.toString();
}
