// A connection of a connect() pool over TLS that the network cuts right after an answer (no TLS
// shutdown: the client reads the answer and an unexpected end of the stream) reconnects at the next
// statement, and the statement that went down with it fails as a retryable error. sluice upgrades
// the connection to TLS itself, so the flush of the driver's buffered write before it handles the
// close (src/db/driver/driver_socket.ts) covers the TLS socket too.
import assert from "node:assert/strict";
import postgres from "postgres";
import { findPostgresBinaries, startTempPostgres } from "../../dev/temp_postgres.ts";
import { connect } from "../../src/db/connect.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";
import { TlsUpgradeError } from "../../mod.ts";
import { adminUrl, freshDatabase } from "../_db.ts";
import { cutAfterAnswerProxy } from "./_cut_proxy.ts";

/** The suite server's binary directory, so that the TLS server is the same PostgreSQL. */
async function suiteBinDir(): Promise<string> {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const [{ setting }] = await admin<{ setting: string }[]>`
      select setting from pg_config where name = 'BINDIR'`;
    return setting;
  } finally {
    await admin.end();
  }
}

/** A throwaway server with `ssl = on` and a self-signed certificate for `localhost`. */
async function startTlsServer() {
  const certDir = await Deno.makeTempDir({ prefix: "sluice-tls-" });
  const cert = `${certDir}/server.crt`;
  const key = `${certDir}/server.key`;
  const openssl = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(openssl.code, 0, new TextDecoder().decode(openssl.stderr));
  await Deno.chmod(key, 0o600);
  // As root the server runs as the OS user postgres (dev/temp_postgres.ts), which must own its key.
  if (Deno.uid() === 0) {
    const chown = await new Deno.Command("chown", { args: ["-R", "postgres", certDir] }).output();
    assert.equal(chown.code, 0, new TextDecoder().decode(chown.stderr));
  }
  const binDir = await suiteBinDir();
  await findPostgresBinaries({ path: binDir });
  const server = await startTempPostgres({
    path: binDir,
    settings: { ssl: true, ssl_cert_file: cert, ssl_key_file: key },
  });
  return {
    url: server.url,
    async [Symbol.asyncDispose]() {
      await server.stop();
      await Deno.remove(certDir, { recursive: true });
    },
  };
}

/**
 * `promise`, or a failure once it has not settled for 30 s: a statement the driver orphaned (it
 * waits on a connection that closed) would otherwise hang the test until the suite's timeout.
 */
async function settled<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: number | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer after 30 s`)), 30_000);
  });
  try {
    return await Promise.race([promise, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** `url` with the query parameter `sslmode`. */
function withSslMode(url: string, mode: string): string {
  const withMode = new URL(url);
  withMode.searchParams.set("sslmode", mode);
  return withMode.href;
}

Deno.test({
  name: "a connect() pool over TLS reconnects after a cut that arrives with an answer",
  async fn() {
    await using server = await startTlsServer();
    // Over TLS the proxy sees ciphertext: the next chunk from the server is the answer.
    await using proxy = cutAfterAnswerProxy(server.url, { endsAnswer: () => true });
    // One connection, so every statement after a cut goes to the connection that was cut; a short
    // connect timeout, so a wedged handshake fails the statement instead of the test's window.
    const pool = connect(withSslMode(proxy.url, "require"), {
      max: 1,
      connectTimeoutSeconds: 2,
    });
    try {
      const [{ pid: first, ssl }] = await pool<{ pid: number; ssl: boolean }[]>`
        select pg_backend_pid() as pid, ssl from pg_stat_ssl where pid = pg_backend_pid()`;
      assert.equal(ssl, true);
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
        const lost = await settled(next!, `round ${round}: the statement sent with the cut`);
        assert.ok(isTransientDatabaseError(lost), `round ${round}: ${String(lost)}`);
        const [{ pid, ssl }] = await settled(
          pool<{ pid: number; ssl: boolean }[]>`
            select pg_backend_pid() as pid, ssl from pg_stat_ssl where pid = pg_backend_pid()`,
          `round ${round}: the statement after the cut`,
        );
        assert.equal(ssl, true);
        pids.add(pid);
      }
      // Every round reconnected: a new session each time.
      assert.equal(pids.size, 6);
    } finally {
      await pool.end({ timeout: 0 });
    }
  },
});

Deno.test("a connect() pool verifies the certificate under sslmode=verify-full, not under require", async () => {
  await using server = await startTlsServer();
  const verifying = connect(withSslMode(server.url, "verify-full"), { max: 1 });
  try {
    // The certificate is self-signed: no authority the client trusts issued it.
    await assert.rejects(verifying`select 1`, (error: Error) => {
      assert.match(String(error), /certificate/i);
      return true;
    });
  } finally {
    await verifying.end({ timeout: 0 });
  }
  const requiring = connect(withSslMode(server.url, "require"), { max: 1 });
  try {
    const [{ ssl }] = await requiring<{ ssl: boolean }[]>`
      select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
    assert.equal(ssl, true);
  } finally {
    await requiring.end({ timeout: 0 });
  }
});

Deno.test("a connect() pool goes on without TLS under sslmode=prefer when the server has no TLS, and fails under require", async () => {
  // The suite's server runs with ssl off.
  await using db = await freshDatabase();
  const preferring = connect(withSslMode(db.url, "prefer"), { max: 1 });
  try {
    const [{ ssl }] = await preferring<{ ssl: boolean }[]>`
      select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
    assert.equal(ssl, false);
  } finally {
    await preferring.end({ timeout: 0 });
  }
  const requiring = connect(withSslMode(db.url, "require"), { max: 1 });
  try {
    await assert.rejects(requiring`select 1`, (error: unknown) => {
      assert.ok(error instanceof TlsUpgradeError, String(error));
      assert.equal(error.code, "SSL_NOT_SUPPORTED");
      assert.equal(error.port, Number(new URL(db.url).port));
      assert.ok(!isTransientDatabaseError(error));
      return true;
    });
    // The connection that failed is back in the pool: the next statement fails the same way
    // instead of waiting.
    await assert.rejects(settled(requiring`select 1`, "the second statement"), TlsUpgradeError);
  } finally {
    await requiring.end({ timeout: 0 });
  }
});
