// The dashboard's browser tests: a headless Chromium, or a clear failure under CI when there is
// none (scripts/setup.sh installs it), and the dashboard started on a test database.
import { type Browser, findChromium, launchChromium, type Page } from "../../dev/chromium.ts";
import { type Dashboard, startDashboard } from "../../src/dashboard/mod.ts";
import type { TestDatabase } from "../_db.ts";

const CHROMIUM = findChromium();
const CI = Deno.env.get("CI") === "true";

/** Whether the browser tests are left out: no Chromium here, and not under CI. */
export const NO_BROWSER = CHROMIUM === null && !CI;
if (NO_BROWSER) {
  console.error(
    "tests/dashboard: no Chromium found: browser tests ignored (apt-get install chromium)",
  );
}

/** Starts Chromium; under CI without one, fails saying how to install it. */
export async function browser(): Promise<Browser> {
  if (CHROMIUM === null) {
    throw new Error(
      "Cannot run the dashboard's browser tests: no Chromium found (SLUICE_CHROMIUM unset, none " +
        "at /usr/bin/chromium); run scripts/setup.sh as root or apt-get install chromium",
    );
  }
  return await launchChromium(CHROMIUM);
}

/**
 * A dashboard on a free port with its log lines collected. Its fallback read interval is longer
 * than any test: what a live page shows arrived through the run's events.
 */
export function dashboard(db: TestDatabase): Dashboard & { log: string[] } {
  const log: string[] = [];
  const started = startDashboard(db.connect(4), {
    port: 0,
    pollMs: 600_000,
    log: (line) => log.push(line),
  });
  return Object.assign(started, { log });
}

/** Where the screenshots referenced by docs/dashboard.md go. */
export const IMAGES = new URL("../../docs/images/", import.meta.url);

/** Opens the dashboard's address (the token becomes a cookie), then a run page, and waits until
 * its live stream is open. */
export async function openRunPage(
  chromium: Browser,
  server: Dashboard,
  runId: string,
): Promise<Page> {
  const page = await chromium.newPage();
  await page.goto(server.url);
  await page.goto(`${server.root}/runs/${runId}`);
  await page.waitFor(`document.querySelector("#live").textContent === "live"`, "the live stream");
  return page;
}
