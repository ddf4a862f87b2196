// Baseline worker function for the `deliver_slack_alerts` queue.
import { startDeliverWorker } from "../_shared/baseline/deliver_worker.ts";
import { serveBaselineWorker } from "../_shared/baseline/serve.ts";

serveBaselineWorker(startDeliverWorker);
