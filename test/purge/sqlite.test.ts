import { describe } from 'vitest';
import { definePurgeSuite } from './suite.js';

describe('purge on a SQLite file', () => {
  definePurgeSuite('sqlite');
});
