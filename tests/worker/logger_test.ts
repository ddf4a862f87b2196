// The worker's logger: level filtering, context fields, derived loggers.
import assert from "node:assert/strict";
import { Logger, type LogRecord } from "../../src/worker/logger.ts";

Deno.test("Logger.with() derives a logger with more context fields on the same sink and level", () => {
  const records: LogRecord[] = [];
  const parent = new Logger("info", (record) => records.push(record), { worker_id: "w1" });
  const child = parent.with({ function_name: "orders", worker_id: "w2" });
  const grandchild = child.with({ isolate_id: "i1" });

  child.debug("filtered by the parent's level");
  child.info("from the child", { run_id: "r1" });
  grandchild.warn("from the grandchild");
  parent.info("from the parent");

  assert.deepEqual(
    records.map((record) => [record.level, record.message, record.fields]),
    [
      ["info", "from the child", { worker_id: "w2", function_name: "orders", run_id: "r1" }],
      ["warn", "from the grandchild", {
        worker_id: "w2",
        function_name: "orders",
        isolate_id: "i1",
      }],
      ["info", "from the parent", { worker_id: "w1" }],
    ],
  );
  assert.equal(child.enabled("debug"), false);
  assert.equal(child.enabled("fatal"), true);
});

Deno.test("a logger whose sink throws does not throw", () => {
  const logger = new Logger("debug", () => {
    throw new Error("sink down");
  }).with({ queue: "orders" });
  logger.error("still fine");
});
