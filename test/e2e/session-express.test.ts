/** The embedded page's session in Chromium for templates/express (see embedded-session.ts). */
import { embeddedSessionSuite } from './embedded-session.js';

embeddedSessionSuite('express');
