import { importGroup } from './groups.ts';

importGroup('e2e-yield');
