// Preloaded into the service's processes by `BENCH_PROFILE=1 npm run bench:transfers` (through NODE_OPTIONS, which
// refuses --cpu-prof; the supervisor passes its children no other variable of ours): SIGUSR2 starts V8's CPU
// profiler, the next SIGUSR2 writes the profile to <tmpdir>/wcs-profile-<pid>.cpuprofile, so a benchmark profiles
// one phase and nothing else.
import fs from 'node:fs';
import { Session } from 'node:inspector';
import os from 'node:os';

{
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      session.post('Profiler.enable');
      session.post('Profiler.start');
      running = true;
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, result) => {
      if (!err)
        fs.writeFileSync(`${os.tmpdir()}/wcs-profile-${process.pid}.cpuprofile`, JSON.stringify(result.profile));
    });
  });
}
