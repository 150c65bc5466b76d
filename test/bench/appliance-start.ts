/**
 * The appliance's start-up: starts it (supervisor, enclave, API, from the bundles `npm start` runs) on an empty data
 * directory until `/readyz` answers 200, stops it, `BENCH_STARTS` times (default 5); prints the time to ready and the
 * CPU all its processes used, start to exit (read from this process's reaped children in /proc/self/stat).
 * Asserts nothing. Run after `npm run build`: `node --import tsx test/bench/appliance-start.ts`.
 */
import fs from 'node:fs';
import os from 'node:os';
import { startAppliance, stopAppliance } from './appliance.ts';

const STARTS = Number(process.env['BENCH_STARTS'] ?? 5);

/** CPU seconds of this process's children that have exited and been waited for (user + system). */
function reapedChildrenCpu(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

for (let i = 0; i < STARTS; i++) {
  const cpu0 = reapedChildrenCpu();
  const t0 = performance.now();
  const appliance = await startAppliance();
  const ready = performance.now() - t0;
  await stopAppliance(appliance);
  console.log(
    `start ${i + 1}/${STARTS}: ready in ${(ready / 1000).toFixed(2)} s; CPU of its processes, start to exit, ${(reapedChildrenCpu() - cpu0).toFixed(2)} s (load ${os.loadavg()[0]!.toFixed(2)})`,
  );
}
