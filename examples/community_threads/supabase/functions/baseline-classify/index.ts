// Baseline worker function for the `classify_threads` queue.
import { startClassifyWorker } from "../_shared/baseline/classify_worker.ts";
import { serveBaselineWorker } from "../_shared/baseline/serve.ts";

serveBaselineWorker(startClassifyWorker);
