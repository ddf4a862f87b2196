// A connection of a connect() pool cut right after an answer, while the code awaiting that answer
// has its next statement buffered in the driver, reconnects at the next statement instead of
// timing out in every later handshake (src/db/driver/driver_socket.ts). The socket sluice hands the driver
// still reaches every host a URL names.
import assert from "node:assert/strict";
import { connect } from "../../src/db/connect.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";
import { freshDatabase } from "../_db.ts";
import { cutAfterAnswerProxy } from "./_cut_proxy.ts";

Deno.test({
  name: "a connect() pool reconnects after a cut that arrives with an answer",
  async fn() {
    await using db = await freshDatabase();
    await using proxy = cutAfterAnswerProxy(db.url);
    // One connection, so every statement after a cut goes to the connection that was cut; a short
    // connect timeout, so a wedged handshake fails the statement instead of the test's window.
    const pool = connect(proxy.url, { max: 1, connectTimeoutSeconds: 2 });
    try {
      const [{ pid: first }] = await pool<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const pids = new Set([first]);
      for (let round = 0; round < 5; round++) {
        proxy.arm();
        // The next statement is buffered by the driver (it is shorter than 1 KiB) in the turn in
        // which the answer and the cut arrive.
        let next: Promise<unknown> | undefined;
        await pool`select 1 as one`.then(() => {
          next = pool`select 2 as two`.then(() => null, (error: unknown) => error);
        });
        // It went down with the connection it was sent on, as a retryable error.
        const lost = await next;
        assert.ok(isTransientDatabaseError(lost), String(lost));
        const [{ pid }] = await pool<{ pid: number }[]>`select pg_backend_pid() as pid`;
        pids.add(pid);
      }
      // Every round reconnected: a new session each time.
      assert.equal(pids.size, 6);
    } finally {
      await pool.end({ timeout: 0 });
    }
  },
});

Deno.test("a connect() pool reaches the second host of a multi-host URL when the first refuses", async () => {
  await using db = await freshDatabase();
  const refusing = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusedPort = (refusing.addr as Deno.NetAddr).port;
  refusing.close();
  const url = new URL(db.url);
  const multiHost = db.url.replace(url.host, `127.0.0.1:${refusedPort},${url.host}`);
  const pool = connect(multiHost, { max: 1 });
  try {
    const [{ port }] = await pool<{ port: number }[]>`select inet_server_port() as port`;
    assert.equal(port, Number(url.port));
  } finally {
    await pool.end({ timeout: 0 });
  }
});

Deno.test("a connect() pool reaches a server through its Unix socket (PGHOST a directory)", async () => {
  await using db = await freshDatabase();
  const [{ dir }] = await db.sql<{ dir: string }[]>`
    select split_part(current_setting('unix_socket_directories'), ',', 1) as dir`;
  const { username, password, port, pathname } = new URL(db.url);
  const script = `
    import { connect } from ${JSON.stringify(new URL("../../src/db/connect.ts", import.meta.url))};
    const pool = connect(Deno.args[0], { max: 1 });
    const [{ address }] = await pool\`select coalesce(inet_client_addr()::text, 'local') as address\`;
    console.log(address);
    await pool.end();
  `;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    // No host in the URL: postgres.js takes PGHOST, and a directory there is a Unix socket.
    args: ["eval", script, `postgres://${pathname}`],
    env: {
      PGHOST: dir,
      PGPORT: port,
      PGUSER: decodeURIComponent(username),
      PGPASSWORD: decodeURIComponent(password),
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  assert.equal(new TextDecoder().decode(stdout).trim(), "local");
});
