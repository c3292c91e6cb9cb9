/** Whether a request names a bearer token (script-made: browsers never attach one to a navigation). */
const BEARER = /^bearer\s/i;

/** One test of the scheme for the layers that treat bearer requests apart (session, security headers). */
export function isBearerRequest(authorization: string | undefined): boolean {
  return authorization !== undefined && BEARER.test(authorization);
}
