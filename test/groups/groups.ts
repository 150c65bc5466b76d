/**
 * How `npm test` (test/run.ts) runs the test files: most of them in a few processes, each importing a group of
 * files, rather than one process per file. A process under tsx costs about a second of CPU before its first test,
 * and seconds more for what it loads (viem, @solana/web3.js, the API's modules for an in-process service); a group
 * pays that once for its files.
 *
 * - Unit files (`*.test.ts` beside the code, and the `*.spec.ts` outside `test/`): a file belongs to the first unit
 *   group with a prefix of its path; the last one takes every file no other took, so a new unit file always runs.
 * - End-to-end specs (`test/*.spec.ts`): the ones listed in a spec group run in that group; every other spec runs in
 *   a process of its own, as do the specs that start the supervisor and kill processes, and any new spec.
 *
 * Each group is an entry file `test/groups/<name>.group.ts` that calls `importGroup('<name>')`. In it, each file's
 * tests run inside a suite named after the file, and the file's module is imported when that suite's turn comes
 * (after the previous file's tests and `after` hooks), so a file's top-level code runs when it would alone. Any file
 * can still run alone: `node --import tsx --test test/wallets.spec.ts`.
 */
import { AsyncResource } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Where unit files are looked for. */
const UNIT_ROOTS = ['test', 'api', 'actors', 'enclave', 'chains', 'store', 'fixtures', 'client'];

/**
 * The unit groups, in order of precedence: a file goes to the first one with a prefix of its path. The split keeps
 * the groups' run times near each other's, so that no group runs alone at the end.
 */
export const UNIT_GROUPS: Record<string, string[]> = {
  'unit-chains-evm': ['chains/evm/'],
  'unit-chains': ['chains/'],
  'unit-enclave-processes': [
    'enclave/server.test.ts',
    'enclave/effect-keys.test.ts',
    'enclave/key-rotation.test.ts',
    'enclave/share-migration.test.ts',
  ],
  'unit-enclave': ['enclave/'],
  'unit-api': ['api/'],
  'unit-rest': [''],
};

/**
 * The spec groups: specs that start the service in-process (`startTestService`), so that its modules are loaded once
 * per group rather than once per spec. Not here: the specs that start the supervisor or kill its processes (and
 * policy-payments-chain, which kills its service's enclave), which run alone.
 */
export const SPEC_GROUPS: Record<string, string[]> = {
  'e2e-admin': [
    'test/actors-admin.spec.ts',
    'test/admin-listener.spec.ts',
    'test/admin-lists.spec.ts',
    'test/permissions-approvals.spec.ts',
    'test/permissions-policies.spec.ts',
    'test/readme-walkthrough.spec.ts',
    'test/trust-proxy.spec.ts',
  ],
  'e2e-requests': [
    'test/adversarial.spec.ts',
    'test/auth.spec.ts',
    'test/bad-input.spec.ts',
    'test/bodies-as-sent.spec.ts',
    'test/fuzz.spec.ts',
    'test/http-limits.spec.ts',
    'test/openapi-contract.spec.ts',
  ],
  'e2e-wallets': [
    'test/claims.spec.ts',
    'test/client.spec.ts',
    'test/share-migration.spec.ts',
    'test/signing.spec.ts',
    'test/wallets.spec.ts',
    'test/readme-policies.spec.ts',
    'test/policy-decisions.spec.ts',
    'test/policy-holds.spec.ts',
  ],
  'e2e-enclave': [
    'test/backup.spec.ts',
    'test/enclave-crash.spec.ts',
    'test/enclave-identity.spec.ts',
    'test/master-key-rotation.spec.ts',
  ],
  'e2e-transfers': [
    'test/idempotency.spec.ts',
    'test/transfers-evm-faults.spec.ts',
    'test/policy-transfers.spec.ts',
    'test/transfers-evm.spec.ts',
    'test/transfers-restart.spec.ts',
    'test/transfers-auto-retry.spec.ts',
    'test/transfers-auto-retry-stops.spec.ts',
  ],
  'e2e-solana': [
    'test/transfers-solana.spec.ts',
    'test/transfers-solana-faults.spec.ts',
    'test/transfers-solana-auto-retry.spec.ts',
    'test/policy-payments-solana.spec.ts',
  ],
  // Yield: anvil with Sepolia's chain id and the local lending protocol; mostly waiting for blocks.
  'e2e-yield': [
    'test/yield-position.spec.ts',
    'test/yield-operations.spec.ts',
    'test/policy-yield.spec.ts',
    'test/yield-restart.spec.ts',
  ],
  'e2e-webhooks': ['test/webhook-targets.spec.ts', 'test/webhooks-cli.spec.ts', 'test/webhooks.spec.ts'],
};

/** Every unit file, relative to the repository root, sorted: `*.test.ts` anywhere, `*.spec.ts` outside `test/`. */
export function unitFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (rel.endsWith('.test.ts') || (rel.endsWith('.spec.ts') && !rel.startsWith('test/'))) found.push(rel);
    }
  };
  for (const dir of UNIT_ROOTS) walk(dir);
  return found.sort();
}

/** Every end-to-end spec (`*.spec.ts` anywhere under `test/`), relative to the repository root, sorted. */
export function specFiles(): string[] {
  return (fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.spec.ts'))
    .map((f) => `test/${f.split(path.sep).join('/')}`)
    .sort();
}

/** The unit group a unit file belongs to. */
export function unitGroupOf(file: string): string {
  for (const [name, prefixes] of Object.entries(UNIT_GROUPS)) {
    if (prefixes.some((p) => file.startsWith(p))) return name;
  }
  throw new Error(`no unit group takes ${file}: the last group of UNIT_GROUPS must take every file`);
}

/** The files of a group. */
export function filesOf(name: string): string[] {
  if (name in SPEC_GROUPS) return SPEC_GROUPS[name]!;
  if (name in UNIT_GROUPS) return unitFiles().filter((f) => unitGroupOf(f) === name);
  throw new Error(`no group ${name}`);
}

/**
 * Throws unless the groups and the files agree: an entry file per group and a group per entry file, every listed
 * spec present and in one group only, and no group empty. A disagreement would leave files unrun or run twice.
 */
export function checkGroups(): void {
  const names = [...Object.keys(UNIT_GROUPS), ...Object.keys(SPEC_GROUPS)].sort();
  const entries = fs
    .readdirSync(path.join(ROOT, 'test/groups'))
    .filter((f) => f.endsWith('.group.ts'))
    .map((f) => f.slice(0, -'.group.ts'.length))
    .sort();
  if (JSON.stringify(entries) !== JSON.stringify(names)) {
    throw new Error(`test/groups/*.group.ts (${entries.join(', ')}) must be the groups (${names.join(', ')})`);
  }
  const specs = new Set(specFiles());
  const listed = Object.values(SPEC_GROUPS).flat();
  for (const file of listed) {
    if (!specs.has(file)) throw new Error(`SPEC_GROUPS lists ${file}, which is not a spec file`);
    if (listed.indexOf(file) !== listed.lastIndexOf(file)) throw new Error(`SPEC_GROUPS lists ${file} twice`);
  }
  for (const name of names) {
    if (filesOf(name).length === 0) throw new Error(`the group ${name} has no file`);
  }
}

/**
 * The test processes that took longest in a full `npm test` (2026-11-28, seconds in comments), longest first: they
 * start first, so that two processes run side by side to the end rather than one long process finishing alone (that
 * run, in alphabetical order, took 601 s for 1,104 s of processes, 552 s at two at a time). Any file not listed runs
 * after them, in alphabetical order; a file listed that no longer exists is skipped.
 */
const LONGEST_FIRST = [
  'test/groups/e2e-yield.group.ts', // 118
  'test/groups/e2e-solana.group.ts', // 98
  'test/groups/e2e-admin.group.ts', // 93
  'test/operator.spec.ts', // 69
  'test/groups/e2e-transfers.group.ts', // 69
  'test/groups/e2e-enclave.group.ts', // 66
  'test/groups/e2e-requests.group.ts', // 55
  'test/groups/unit-rest.group.ts', // 50
  'test/groups/e2e-webhooks.group.ts', // 46
  'test/actor-host-crash.spec.ts', // 42
  'test/groups/e2e-wallets.group.ts', // 40
  'test/transfers-solana-auto-retry-crash.spec.ts', // 40
  'test/groups/unit-enclave-processes.group.ts', // 37
];

/**
 * What `npm test` runs (test/run-files.ts), each file in a process of its own: the specs in no group, and the groups;
 * LONGEST_FIRST first.
 */
export function testFiles(): string[] {
  checkGroups();
  const grouped = new Set(Object.values(SPEC_GROUPS).flat());
  const entries = [...Object.keys(UNIT_GROUPS), ...Object.keys(SPEC_GROUPS)].map((n) => `test/groups/${n}.group.ts`);
  const all = [...specFiles().filter((f) => !grouped.has(f)), ...entries].sort();
  const first = LONGEST_FIRST.filter((f) => all.includes(f));
  return [...first, ...all.filter((f) => !first.includes(f))];
}

/** Registers one suite per file of the group `name`, each importing its file when it runs. */
export function importGroup(name: string): void {
  checkGroups();
  // Each suite waits for the one before it to finish: a file's module (and whatever it starts at its top level) is
  // loaded when its own tests are about to run, not all at once when the group starts.
  let previous: Promise<void> = Promise.resolve();
  for (const file of filesOf(name)) {
    const turn = previous;
    let done!: () => void;
    previous = new Promise<void>((resolve) => {
      done = resolve;
    });
    describe(file, async () => {
      after(() => done());
      // node:test finds the suite a `test()` belongs to from the async context it is called in; awaiting `turn`
      // (made outside this suite) leaves that context, so the import runs in a scope made here, inside it.
      const scope = new AsyncResource('test-file');
      await turn;
      try {
        await scope.runInAsyncScope(() => import(pathToFileURL(path.join(ROOT, file)).href));
      } catch (err) {
        done();
        throw err;
      }
    });
  }
}
