import { POSTGRES } from '../helpers/databases.js';
import { multiInstanceSuite } from './suite.js';

multiInstanceSuite(POSTGRES);
