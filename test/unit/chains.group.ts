import { importGroup } from './groups.ts';

importGroup('chains');
