import type { RpcAnswer, RpcBatchPoster, RpcCall } from './create-rpc-batch-poster.ts';

/**
 * Coalesces the reads of callers that ask within one turn of the event loop into one batch: every caller's calls,
 * then `shared` (read once for all of them, after theirs), posted together when the turn ends. Each caller gets its
 * own answers and the shared ones; when the batch fails as a whole, each caller's read rejects with that error.
 *
 * Many operations polled on the same interval wake together (the actor host dispatches the effects of one group
 * commit in one turn): one request for all of them instead of one each (`npm run bench:yield-deposits` counts them).
 */
export function createCallCoalescer(poster: Pick<RpcBatchPoster, 'post'>, shared: readonly RpcCall[]) {
  interface Waiter {
    calls: readonly RpcCall[];
    resolve(value: { own: RpcAnswer[]; shared: RpcAnswer[] }): void;
    reject(error: unknown): void;
  }
  let queue: Waiter[] | null = null;

  async function flush(waiting: Waiter[]): Promise<void> {
    try {
      const { answers } = await poster.post([...waiting.flatMap((w) => w.calls), ...shared]);
      const sharedAnswers = answers.slice(answers.length - shared.length);
      let at = 0;
      for (const w of waiting) {
        w.resolve({ own: answers.slice(at, at + w.calls.length), shared: sharedAnswers });
        at += w.calls.length;
      }
    } catch (error) {
      for (const w of waiting) w.reject(error);
    }
  }

  return function read(calls: readonly RpcCall[]): Promise<{ own: RpcAnswer[]; shared: RpcAnswer[] }> {
    return new Promise((resolve, reject) => {
      if (queue === null) {
        const waiting: Waiter[] = [];
        queue = waiting;
        setImmediate(() => {
          queue = null;
          void flush(waiting);
        });
      }
      queue.push({ calls, resolve, reject });
    });
  };
}
