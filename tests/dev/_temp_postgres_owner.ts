// Child process of the abandonment tests: starts a throwaway cluster, reports it on one stdout line,
// then either exits at once without stopping it (argument "exit") or waits to be killed.
import { startTempPostgres } from "../../dev/temp_postgres.ts";

const pg = await startTempPostgres({ guardianIntervalSeconds: 0.2 });
console.log(JSON.stringify({ pid: pg.pid, dataDir: pg.dataDir, url: pg.url }));
if (Deno.args[0] === "exit") Deno.exit(0);
// Should the test never kill us, clean up instead of lingering.
setTimeout(async () => {
  await pg.stop();
  Deno.exit(1);
}, 60_000);
