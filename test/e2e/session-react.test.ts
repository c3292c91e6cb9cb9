/** The embedded page's session in Chromium for templates/react (see embedded-session.ts). */
import { embeddedSessionSuite } from './embedded-session.js';

embeddedSessionSuite('react');
