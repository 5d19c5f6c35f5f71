/**
 * `shardwise` as its `bin` runs it — `main(argv)` on the process's streams and signals — with the
 * CPU it spent from the first flag read to the exit code (user + system, µs) written last on
 * stderr as `cpu {"user":…,"system":…}`, for bench/cli-ingest.bench.ts (start-up left out).
 *
 *   node --import tsx bench/cli-fixtures/run-command.ts ingest FILE --to URL,… --json
 */
import { main } from '../../src/cli/main.js';

const before = process.cpuUsage();
const code = await main(process.argv.slice(2));
const cpu = process.cpuUsage(before);
process.stderr.write(`cpu ${JSON.stringify(cpu)}\n`);
process.exitCode = code;
