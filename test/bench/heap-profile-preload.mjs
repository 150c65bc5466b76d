// Preloaded into the service's processes by `BENCH_PROFILE=heap npm run bench:auto-retry` (through NODE_OPTIONS, as
// cpu-profile-preload.mjs is): SIGUSR2 starts V8's sampling heap profiler, counting objects the collector has freed
// since as well as those still alive (so it shows where a phase's allocations come from, not only what it kept); the
// next SIGUSR2 writes <tmpdir>/wcs-heap-<pid>.heapprofile (open it in Chrome's DevTools, Memory tab).
import fs from 'node:fs';
import { Session } from 'node:inspector';
import os from 'node:os';

{
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      session.post('HeapProfiler.enable');
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 64 * 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      running = true;
      return;
    }
    running = false;
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (!err) fs.writeFileSync(`${os.tmpdir()}/wcs-heap-${process.pid}.heapprofile`, JSON.stringify(result.profile));
    });
  });
}
