/**
 * `shardwise ingest FILE… --to URL[,URL…]`: the lines of JSONL files (`.jsonl.gz` too), in
 * order, sent to HTTP shards in batches — the lines as they are in the files — with checkpoints
 * to resume from and dead letters for what fails (see docs/durable-loads.md).
 */
import { INGEST_HELP, loadSettings } from './ingest-args.js';
import { type CommandIo, runLoad } from './load.js';

export { INGEST_HELP };

export async function ingestCommand(argv: string[], io: CommandIo): Promise<number> {
  const settings = loadSettings('ingest', argv);
  if (settings === undefined) {
    io.out.write(`${INGEST_HELP}\n`);
    return 0;
  }
  return runLoad(settings, io);
}
