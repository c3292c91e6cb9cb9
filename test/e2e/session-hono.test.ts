/** The embedded page's session in Chromium for templates/hono (see embedded-session.ts). */
import { embeddedSessionSuite } from './embedded-session.js';

embeddedSessionSuite('hono');
