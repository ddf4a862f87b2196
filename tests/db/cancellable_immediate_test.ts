// With sluice loaded, `clearImmediate` cancels also in the one case where Deno 2.5's does not: from
// an I/O callback of the event-loop turn in which the immediate is already due
// (src/db/driver/cancellable_immediate.ts). The I/O is PostgreSQL's one-byte answer to an SSLRequest. The
// wrapper also runs selected pending immediates early, for the driver's flush before a close.
import assert from "node:assert/strict";
import net from "node:net";
import { once } from "node:events";
import "../../src/db/driver/postgres.ts";
import { runPendingImmediates } from "../../src/db/driver/cancellable_immediate.ts";
import { freshDatabase } from "../_db.ts";
import { blockEventLoop } from "../_support.ts";

/** The globals postgres.js calls (Deno's type of `globalThis` does not declare them). */
const timers = globalThis as unknown as {
  setImmediate(callback: () => void): unknown;
  clearImmediate(handle: unknown): void;
};

/** The 8-byte SSLRequest; a server without TLS answers "N". */
const SSL_REQUEST = new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]);

Deno.test("an immediate cleared from an I/O callback of the turn in which it is due never runs", async () => {
  await using db = await freshDatabase();
  const { hostname, port } = new URL(db.url);
  let clearedRuns = 0;
  for (let i = 0; i < 20; i++) {
    const socket = net.connect(Number(port), hostname);
    await once(socket, "connect");
    let cleared = false;
    const answered = once(socket, "data");
    socket.write(SSL_REQUEST);
    const immediate = timers.setImmediate(() => {
      if (cleared) clearedRuns++;
    });
    void answered.then(() => {
      timers.clearImmediate(immediate);
      cleared = true;
    });
    blockEventLoop(20); // the answer arrives and the immediate falls due meanwhile
    await answered;
    // A timer set now runs in a later turn, after any immediate collected with the answer.
    await new Promise((resolve) => setTimeout(resolve, 0));
    socket.destroy();
  }
  assert.equal(clearedRuns, 0);
});

Deno.test("runPendingImmediates runs the selected pending immediates at once, in order, and only once", async () => {
  const runs: string[] = [];
  function picked(label: string) {
    runs.push(label);
  }
  const other = () => runs.push("other");
  timers.setImmediate(() => picked("first"));
  timers.setImmediate(other);
  const cleared = timers.setImmediate(() => picked("cleared"));
  timers.clearImmediate(cleared);
  timers.setImmediate(() => picked("second"));
  runPendingImmediates((callback) => callback !== other);
  assert.deepEqual(runs, ["first", "second"]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(runs, ["first", "second", "other"]);
});
