import { MARIADB } from '../helpers/databases.js';
import { multiInstanceSuite } from './suite.js';

multiInstanceSuite(MARIADB);
