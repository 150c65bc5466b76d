import type http from 'node:http';
import type { Socket } from 'node:net';

interface Tracked {
  socket: Socket;
  /** The request on this connection whose answer is not finished, if any. */
  req?: http.IncomingMessage;
}

/**
 * Holds a listener to `cap` open connections without letting slow clients lock everyone else out.
 *
 * Node's own `server.maxConnections` refuses the newcomer at the cap: a crowd of idle or trickling
 * connections that reconnects as fast as the timeouts close it then keeps the listener full, and a caller
 * with a real request waits in the accept queue. Here the newcomer is admitted and the connection that has
 * gone longest without progress is closed instead: one that has not finished sending its request (head or
 * body) or sits idle between requests. A connection whose request has fully arrived and is being answered
 * is never closed. Only when every connection is being answered is the newcomer closed.
 *
 * Connections are kept in the order of their last progress (connected, request head received, answer
 * finished), so the first closable one is found from the front.
 *
 * `startClosing()` is for the server's close: Node's `close()` ends only the keep-alive connections idle at that moment,
 * and stops timing the others out, so a connection that never sent a request (a client's pool connecting ahead of
 * need) or one whose answer finishes later would keep the close waiting for minutes.
 */
export function guardConnections(
  server: http.Server,
  cap: number,
  hooks: { onEvicted?: () => void; onDropped?: () => void } = {},
): { readonly open: number; startClosing(): void } {
  const tracked = new Map<Socket, Tracked>();
  let closing = false;
  const touch = (t: Tracked) => {
    tracked.delete(t.socket);
    tracked.set(t.socket, t);
  };
  const closable = (t: Tracked) => t.req === undefined || !t.req.complete;

  server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    const entry: Tracked = { socket };
    tracked.set(socket, entry);
    socket.once('close', () => tracked.delete(socket));
    if (tracked.size <= cap) return;
    for (const t of tracked.values()) {
      if (t === entry) break;
      if (closable(t)) {
        tracked.delete(t.socket);
        t.socket.destroy();
        hooks.onEvicted?.();
        return;
      }
    }
    tracked.delete(socket);
    socket.destroy();
    hooks.onDropped?.();
  });

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const t = tracked.get(req.socket);
    if (!t) return;
    t.req = req;
    touch(t);
    res.once('close', () => {
      if (t.req !== req) return;
      t.req = undefined;
      // Closing: the answer is out, the connection ends (Node would keep it for the client's next request).
      if (closing) t.socket.end();
      else if (tracked.has(t.socket)) touch(t);
    });
  });

  return {
    get open() {
      return tracked.size;
    },
    /**
     * The server is closing: connections without a request under way are closed now, any accepted from now on at
     * once, and the others once their answer is finished.
     */
    startClosing() {
      closing = true;
      for (const t of [...tracked.values()]) if (t.req === undefined) t.socket.destroy();
    },
  };
}
