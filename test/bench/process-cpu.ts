/**
 * CPU accounting of the appliance's processes during a benchmark phase, from /proc (Linux): what each process
 * spent per request or per transfer, beside its share of a core.
 */
import fs from 'node:fs';

/** CPU seconds a process (or, with `tid`, one of its threads) has used so far in user and in kernel mode. */
export function cpuTimes(pid: number, tid?: number): { user: number; system: number } {
  try {
    const file = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
    const fields = fs.readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/** The supervisor's children (enclave, API) by their command line, with `others` (name → pid) added. */
export function applianceProcesses(supervisorPid: number, others: Record<string, number> = {}): Record<string, number> {
  const out: Record<string, number> = { supervisor: supervisorPid, ...others };
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.split(') ')[1]!.split(' ')[1]) !== supervisorPid) continue;
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      out[cmd.includes('enclave') ? 'enclave' : 'api'] = Number(d);
    } catch {
      // gone
    }
  }
  return out;
}

/** Times a thread has gone to sleep (its voluntary context switches): each one costs a wake-up later. */
function sleeps(pid: number, tid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    return Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

/** Thread ids of a process now (none once it is gone). */
export function threadIds(pid: number): number[] {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
}

/** CPU seconds and sleeps of each thread of a process, by thread id. */
function threadSeconds(pid: number): Map<number, { seconds: number; sleeps: number }> {
  const out = new Map<number, { seconds: number; sleeps: number }>();
  for (const tid of threadIds(pid)) {
    const t = cpuTimes(pid, tid);
    out.set(tid, { seconds: t.user + t.system, sleeps: sleeps(pid, tid) });
  }
  return out;
}

/**
 * Runs `work` and prints the CPU each process spent per unit (`count()` units done, named `unit`) during it; for
 * the service's processes (api, enclave), also their busiest threads (the main thread is the one whose id is the
 * process id; worker threads, libuv's pool and V8's helpers are the others) with the times each went to sleep per
 * unit: every sleep is a wake-up later, which on a virtual machine's other core costs an interrupt.
 */
export async function withCpu<T>(
  procs: Record<string, number>,
  unit: string,
  count: (result: T) => number,
  work: () => Promise<T>,
): Promise<T> {
  const before = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuTimes(pid)]));
  const threadsBefore = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, threadSeconds(pid)]));
  const t0 = performance.now();
  const result = await work();
  const wall = (performance.now() - t0) / 1000;
  const n = count(result);
  const µs = (seconds: number) => ((seconds / n) * 1e6).toFixed(0);
  let total = 0;
  const parts = Object.entries(procs).map(([k, pid]) => {
    const after = cpuTimes(pid);
    const system = after.system - before[k]!.system;
    const used = after.user - before[k]!.user + system;
    total += used;
    return `${k} ${µs(used)} µs (kernel ${µs(system)}; ${((100 * used) / wall).toFixed(0)}% of a core)`;
  });
  console.log(`  CPU per ${unit}: ${parts.join(', ')}; all ${µs(total)} µs`);
  for (const name of ['api', 'enclave']) {
    const pid = procs[name];
    if (pid === undefined) continue;
    const was = threadsBefore[name]!;
    const threads = [...threadSeconds(pid)]
      .map(([tid, now]) => ({
        tid,
        used: now.seconds - (was.get(tid)?.seconds ?? 0),
        sleeps: now.sleeps - (was.get(tid)?.sleeps ?? 0),
      }))
      .filter((t) => t.used > 0)
      .sort((a, b) => b.used - a.used)
      .slice(0, 5);
    console.log(
      `    ${name} threads: ${threads.map((t) => `${t.tid === pid ? 'main' : t.tid} ${µs(t.used)} µs ${(t.sleeps / n).toFixed(2)} sleeps`).join(', ')}`,
    );
  }
  return result;
}
