import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createBatcher } from './batcher.ts';
import { EnclaveRequestError, type ItemResult } from './errors.ts';

/** A fake worker: records each task's items and lets the test finish tasks when it wants. */
function fakeRunner<I>() {
  const tasks: { items: I[]; finish(results: ItemResult<string>[]): void; fail(error: Error): void }[] = [];
  return {
    tasks,
    run(items: I[]): Promise<ItemResult<string>[]> {
      return new Promise((resolve, reject) => tasks.push({ items, finish: resolve, fail: reject }));
    },
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const echo = (items: number[]): ItemResult<string>[] => items.map((i) => ({ ok: true, value: `r${i}` }));

describe('batcher', () => {
  test('spreads waiting items over the free slots, and items arriving meanwhile leave together', async () => {
    const runner = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 2 });
    const submit = batcher.lane<number, string>({ maxItemsPerTask: 32, run: (items) => runner.run(items) });

    const first = Array.from({ length: 10 }, (_, i) => submit(i));
    await turn();
    assert.deepEqual(
      runner.tasks.map((t) => t.items),
      [
        [0, 1, 2, 3, 4],
        [5, 6, 7, 8, 9],
      ],
    );
    const later = Array.from({ length: 7 }, (_, i) => submit(10 + i));
    await turn();
    assert.equal(runner.tasks.length, 2, 'no slot free: the new items wait');
    runner.tasks[0]!.finish(echo(runner.tasks[0]!.items));
    await turn();
    assert.deepEqual(runner.tasks[2]!.items, [10, 11, 12, 13, 14, 15, 16], 'they leave together');
    runner.tasks[1]!.finish(echo(runner.tasks[1]!.items));
    runner.tasks[2]!.finish(echo(runner.tasks[2]!.items));
    assert.deepEqual(
      await Promise.all([...first, ...later]),
      Array.from({ length: 17 }, (_, i) => `r${i}`),
    );
    assert.equal(batcher.tasksInFlight, 0);
  });

  test('a light load sends one item per task at once; tasks never exceed maxItemsPerTask', async () => {
    const runner = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 4 });
    const submit = batcher.lane<number, string>({ maxItemsPerTask: 3, run: (items) => runner.run(items) });
    const one = submit(1);
    await turn();
    assert.deepEqual(runner.tasks[0]!.items, [1]);
    runner.tasks[0]!.finish(echo([1]));
    assert.equal(await one, 'r1');

    runner.tasks.length = 0;
    let done = false;
    const many = Promise.all(Array.from({ length: 40 }, (_, i) => submit(i))).finally(() => {
      done = true;
    });
    while (!done) {
      await turn();
      for (const task of runner.tasks.splice(0)) {
        assert.ok(task.items.length <= 3);
        task.finish(echo(task.items));
      }
    }
    assert.equal((await many).length, 40);
  });

  test('each item settles on its own result: a bad item fails alone', async () => {
    const runner = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 1 });
    const submit = batcher.lane<number, string>({ maxItemsPerTask: 8, run: (items) => runner.run(items) });
    const outcomes = Promise.allSettled([submit(0), submit(1), submit(2)]);
    await turn();
    runner.tasks[0]!.finish([
      { ok: true, value: 'r0' },
      { ok: false, code: 'NO_KEY', message: 'no key' },
      { ok: false, code: 'INTERNAL', message: 'Error: boom' },
    ]);
    const [ok, expected, internal] = await outcomes;
    assert.deepEqual(ok, { status: 'fulfilled', value: 'r0' });
    assert.equal(expected!.status, 'rejected');
    const expectedError = (expected as PromiseRejectedResult).reason;
    assert.ok(expectedError instanceof EnclaveRequestError);
    assert.equal(expectedError.code, 'NO_KEY');
    const internalError = (internal as PromiseRejectedResult).reason;
    assert.ok(internalError instanceof Error && !(internalError instanceof EnclaveRequestError));
    assert.match(internalError.message, /boom/);
  });

  test('a task that fails as a whole fails its items, and the next task still runs', async () => {
    const runner = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 1 });
    const submit = batcher.lane<number, string>({ maxItemsPerTask: 8, run: (items) => runner.run(items) });
    const lost = Promise.allSettled([submit(0), submit(1)]);
    await turn();
    const next = submit(2);
    runner.tasks[0]!.fail(new Error('worker died'));
    assert.deepEqual(
      (await lost).map((o) => o.status),
      ['rejected', 'rejected'],
    );
    await turn();
    runner.tasks[1]!.finish(echo([2]));
    assert.equal(await next, 'r2');
  });

  test('lanes share the task slots and take turns', async () => {
    const a = fakeRunner<number>();
    const b = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 2 });
    const submitA = batcher.lane<number, string>({ maxItemsPerTask: 2, run: (items) => a.run(items) });
    const submitB = batcher.lane<number, string>({ maxItemsPerTask: 2, run: (items) => b.run(items) });
    const all = [submitA(1), submitA(2), submitA(3), submitA(4), submitB(5)];
    await turn();
    assert.equal(a.tasks.length + b.tasks.length, 2, 'two slots in all');
    assert.equal(b.tasks.length, 1, 'the second lane got a turn');
    for (let i = 0; i < 5 && a.tasks.length + b.tasks.length < 4; i++) {
      for (const task of [...a.tasks, ...b.tasks]) task.finish(echo(task.items));
      await turn();
    }
    for (const task of [...a.tasks, ...b.tasks]) task.finish(echo(task.items));
    assert.deepEqual(await Promise.all(all), ['r1', 'r2', 'r3', 'r4', 'r5']);
  });

  test('close() fails what waits and refuses new items', async () => {
    const runner = fakeRunner<number>();
    const batcher = createBatcher({ maxTasksInFlight: 1 });
    const submit = batcher.lane<number, string>({ maxItemsPerTask: 1, run: (items) => runner.run(items) });
    const running = submit(0);
    await turn();
    const waiting = submit(1);
    batcher.close();
    await assert.rejects(waiting, /closed/);
    await assert.rejects(submit(2), /closed/);
    runner.tasks[0]!.finish(echo([0]));
    assert.equal(await running, 'r0');
  });
});
