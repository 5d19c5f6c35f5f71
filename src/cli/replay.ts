/**
 * `shardwise replay DEADLETTER… --to URL[,URL…]`: the records of dead-letter files sent again,
 * as they were first taken (`readDeadLetters`), through the same path as `shardwise ingest` —
 * checkpoints included — with a dead-letter file of its own for what fails again.
 */
import { loadSettings, REPLAY_HELP } from './ingest-args.js';
import { type CommandIo, runLoad } from './load.js';

export { REPLAY_HELP };

export async function replayCommand(argv: string[], io: CommandIo): Promise<number> {
  const settings = loadSettings('replay', argv);
  if (settings === undefined) {
    io.out.write(`${REPLAY_HELP}\n`);
    return 0;
  }
  return runLoad(settings, io);
}
