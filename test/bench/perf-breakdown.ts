/**
 * Where every core's time goes during a benchmark phase, per request: `perf record -a -g` samples the whole machine
 * (idle included), and each sample is charged to its thread (API main thread, enclave main thread, crypto workers,
 * the load generator, the other threads of the API and the enclave, idle) and to what it was running: a native
 * library (libsecp256k1, libsodium), the kernel (TCP, Unix socket, scheduler, …), JavaScript by package (ours,
 * fastify, piscina, Node's own modules) or the Node runtime (V8 and libuv, garbage collection apart).
 *
 * Unlike the V8 CPU profiles of BENCH_PROFILE, these are samples of CPU time: a thread preempted inside a system
 * call is not charged for the time it waits. JavaScript frames are named from the `--perf-basic-prof` maps the
 * service's processes write to /tmp (the load generator's are not: its JavaScript counts as "JS unnamed").
 * Needs `perf` and permission to sample every CPU (root, or kernel.perf_event_paranoid ≤ -1).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';

/** Whether `perf` can sample the whole machine here. */
export function perfAvailable(): boolean {
  try {
    execFileSync('perf', ['record', '-q', '-a', '-o', '/dev/null', '--', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Samples every CPU with call stacks into `file` for `seconds`; resolves when perf has written it. */
export async function recordMachine(file: string, seconds: number): Promise<void> {
  const perf = spawn('perf', ['record', '-q', '-a', '-g', '-o', file, '--', 'sleep', String(seconds)], {
    stdio: 'ignore',
  });
  const [code] = (await once(perf, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`perf record exited with ${code}`);
}

/**
 * Removes what --perf-basic-prof made process `pid` write: its JIT map (/tmp/perf-<pid>.map, read by perf script)
 * and the `isolate-<address>-<pid>-v8.log` files in its working directory `dir`.
 */
export function removeV8Logs(dir: string, pid: number): void {
  fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('isolate-') && name.endsWith(`-${pid}-v8.log`)) fs.rmSync(`${dir}/${name}`, { force: true });
  }
}

interface Sample {
  tid: number;
  /** Innermost frame first: `<ip> <symbol> (<dso>)`. */
  frames: string[];
}

function readSamples(file: string): Sample[] {
  const text = execFileSync('perf', ['script', '-i', file, '-F', 'tid,ip,sym,dso'], {
    maxBuffer: 1 << 30,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const samples: Sample[] = [];
  let current: Sample | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current) samples.push(current);
      current = undefined;
    } else if (line.startsWith('\t')) {
      // A frame; a sample's first line is its thread id, right-aligned with spaces.
      current?.frames.push(line.trim());
    } else {
      current = { tid: Number(line.trim().split(/\s+/)[0]), frames: [] };
    }
  }
  if (current) samples.push(current);
  return samples;
}

/** What a sample was running, from its innermost frame (and, for the kernel, the system call under it). */
function category(frames: string[]): string {
  const leaf = frames[0] ?? '';
  if (leaf.includes('secp256k1') && leaf.includes('.node)')) return 'libsecp256k1';
  if (leaf.includes('sodium')) return 'libsodium';
  if (leaf.includes('[kernel')) {
    const stack = frames.join(' ');
    if (/\btcp_|\bip_|net_rx/.test(stack)) return 'kernel TCP';
    if (/\bunix_/.test(stack)) return 'kernel Unix socket';
    if (/futex/.test(stack)) return 'kernel futex';
    if (/epoll/.test(stack)) return 'kernel epoll';
    if (/schedule|finish_task_switch|safe_halt/.test(stack)) return 'kernel scheduler';
    return 'kernel other';
  }
  for (const frame of frames) {
    if (!frame.includes('JS:') && !frame.includes('/tmp/perf-')) continue;
    if (/dist\/(api|enclave)\/|dist\/main\.js|\/work\/[^ ]*\/(api|enclave|chains|actors|store)\//.test(frame))
      return 'JS ours';
    const pkg = /node_modules\/(@[^/]+\/[^/]+|[^/]+)\//.exec(frame);
    if (pkg) return `JS ${pkg[1]}`;
    if (frame.includes('node:')) return 'JS node core';
    return 'JS unnamed';
  }
  if (/Scaveng|Heap::|MarkCompact|Sweep|GCTracer/.test(frames.join(' '))) return 'garbage collection';
  if (leaf.includes('libc.so')) return 'libc';
  if (leaf.includes('/node)') || leaf.includes('bin/node')) return 'node runtime';
  return 'other';
}

/**
 * Prints, per request, the CPU of each thread group and its largest parts. `threads` names thread groups by
 * thread id (threads not named are "other processes"; tid 0 is idle); `requests` is the number of requests the
 * phase served while perf recorded, `seconds` how long it recorded.
 */
export function printBreakdown(
  file: string,
  threads: Map<number, string>,
  requests: number,
  seconds: number,
  cpus: number,
): void {
  const samples = readSamples(file);
  if (samples.length === 0 || requests <= 0) {
    console.log('  perf breakdown: no samples');
    return;
  }
  // perf samples each CPU at the same rate, so a sample is (CPUs × seconds / samples) of CPU time.
  const µsPerSample = (cpus * seconds * 1e6) / samples.length / requests;
  const groups = new Map<string, Map<string, number>>();
  for (const s of samples) {
    const group = s.tid === 0 ? 'idle' : (threads.get(s.tid) ?? 'other processes');
    const parts = groups.get(group) ?? new Map<string, number>();
    const part = s.tid === 0 ? 'idle' : category(s.frames);
    parts.set(part, (parts.get(part) ?? 0) + 1);
    groups.set(group, parts);
  }
  const total = (parts: Map<string, number>) => [...parts.values()].reduce((a, b) => a + b, 0);
  console.log(`  CPU per request by thread, from perf samples (all ${(samples.length * µsPerSample).toFixed(0)} µs):`);
  for (const [group, parts] of [...groups].sort((a, b) => total(b[1]) - total(a[1]))) {
    const µs = total(parts) * µsPerSample;
    if (µs < 0.5) continue;
    const largest = [...parts]
      .sort((a, b) => b[1] - a[1])
      .filter(([, n]) => n * µsPerSample >= 0.5)
      .slice(0, 8)
      .map(([part, n]) => `${part} ${(n * µsPerSample).toFixed(1)}`);
    console.log(
      `    ${group.padEnd(22)} ${µs.toFixed(1).padStart(6)} µs${group === 'idle' ? '' : `: ${largest.join(', ')}`}`,
    );
  }
}
