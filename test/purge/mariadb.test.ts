import { describe } from 'vitest';
import { definePurgeSuite } from './suite.js';

describe('purge on MariaDB', () => {
  definePurgeSuite('mysql');
});
