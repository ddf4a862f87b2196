// A worker function entrypoint run as a plain Deno process by local_mode_test.ts: configured from
// the environment only, exactly as a developer would run one.
import { Flow } from "../../src/dsl/flow.ts";
import { serveWorker } from "../../src/edge/mod.ts";

const flow = new Flow({ slug: Deno.env.get("TEST_FLOW_SLUG")! }).step({ slug: "a" }, () => 1);

serveWorker(flow, {
  port: 0,
  hostname: "127.0.0.1",
  heartbeatIntervalMs: 100,
  onListen: (addr) => console.log(JSON.stringify({ port: addr.port })),
});
