import assert from "node:assert/strict";
import { groupedQueues, placements } from "../../../bench/_back_office_layout.ts";

Deno.test("back office: the benchmark's grouped layout places every step of every flow", async () => {
  const flows = await placements();
  assert.equal(flows.length, 10);
  const steps = flows.reduce((n, flow) => n + flow.steps.length, 0);
  const placed = flows.reduce((n, flow) => n + Object.keys(flow.grouped).length, 0);
  assert.equal(placed, steps, "no queue named for a step the flows do not have");
  assert.equal(flows.reduce((n, flow) => n + flow.perStep.length, 0), 25);
  assert.deepEqual(groupedQueues(flows), [
    "office_bulk",
    "office_interactive",
    "office_media",
    "office_payments",
    "office_render",
    "office_webhooks",
  ]);
});
