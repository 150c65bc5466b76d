import { importGroup } from './groups.ts';

importGroup('unit-api');
