import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

Deno.test("deno task demo with SLUICE_EMBEDDED=1 runs the example flow on the embedded database", async () => {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["task", "demo"],
    cwd: ROOT,
    // An empty DATABASE_URL counts as unset; the variable forces embedded mode although this
    // machine has server binaries.
    env: { DATABASE_URL: "", SLUICE_EMBEDDED: "1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(stdout);
  const err = new TextDecoder().decode(stderr);
  assert.equal(code, 0, `exit code ${code}\nstdout:\n${out}\nstderr:\n${err}`);
  assert.match(out, /Started an embedded PostgreSQL \(PGlite, in this process\)/);
  assert.match(out, /Installed sluice: \d+ migrations applied, PGMQ compat/);
  const start = out.indexOf("Run output:\n");
  assert.ok(start >= 0, `no run output in:\n${out}`);
  assert.deepEqual(JSON.parse(out.slice(start + "Run output:\n".length).split("\n\n")[0]), {
    invoice: {
      customer: "Ada Lovelace",
      items: 18,
      lines: [
        { sku: "notebook", amount: 1350 },
        { sku: "pencil", amount: 960 },
        { sku: "eraser", amount: 240 },
        { sku: "ruler", amount: 300 },
      ],
      subtotal: 2850,
      shipping: 0,
      total: 2850,
    },
  });
  assert.match(out, /reserve_stock: attempt 1 failed: Error: inventory service timed out/);
  assert.match(out, /express_shipping was skipped/);
  assert.match(out, /run completed \| steps 5\/5 resolved \| tasks 7\/7 done/);
});
