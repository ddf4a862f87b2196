// The sockets of connect() pools: an error of a socket nobody listens to any more (the driver
// stops listening when it handles the close) is not thrown where no caller can catch it.
import assert from "node:assert/strict";
import { driverSocketFactory } from "../../src/db/driver/driver_socket.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";

Deno.test("a connect() pool's socket drops an error that arrives after the driver stopped listening", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const accepted = listener.accept();
  const factory = driverSocketFactory();
  const socket = await factory({
    host: ["127.0.0.1"],
    port: [port],
    path: false,
    connect_timeout: 5,
  });
  const conn = await accepted;
  const closed = new Promise((resolve) => socket.once("close", resolve));
  socket.removeAllListeners("error");
  // What Deno reports for a write the stream still had when the peer went away.
  const late = Object.assign(new Error("write UNKNOWN"), { code: "UNKNOWN", syscall: "write" });
  assert.doesNotThrow(() => socket.emit("error", late));
  socket.destroy();
  await closed;
  conn.close();
  listener.close();
  factory.gate.close();
});

Deno.test("a write UNKNOWN of a lost connection is transient (retried), other UNKNOWN codes are not", () => {
  assert.equal(isTransientDatabaseError({ code: "UNKNOWN", syscall: "write", errno: -4094 }), true);
  assert.equal(isTransientDatabaseError({ code: "UNKNOWN", syscall: "open" }), false);
});
