import { importGroup } from './groups.ts';

importGroup('unit-chains');
