#!/usr/bin/env node
/**
 * The `shardwise` command: `ingest`, `replay`, `demo`, `simulate`. Bad flags, bad scenario files
 * and options the balancer refuses print a message and exit with code 2; a system error (a file
 * that cannot be written) prints its message and exits with 1. Only a bug prints a stack.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isShardwiseError } from '../base/errors.js';
import { UsageError } from './args.js';
import { DEMO_HELP, demo } from './demo.js';
import { ingestCommand } from './ingest.js';
import type { CommandIo } from './load.js';
import { pickerList } from './pickers.js';
import { replayCommand } from './replay.js';
import { SIMULATE_HELP, simulateCommand } from './simulate.js';
import { wrap } from './wrap.js';

const HELP = `Usage: shardwise <command> [flags]

Commands:
  ingest     send the lines of JSONL files to HTTP shards in batches, with
             checkpoints to resume from and dead letters for what fails
  replay     send the records of dead-letter files again
  demo       push a generated dataset through local HTTP shards with three
             pickers, and compare them
  simulate   run pickers on simulated shards (virtual time), print a table
             and write an SVG report

Pickers (--picker NAME of ingest and replay, NAME[,NAME…] of demo and
simulate):
${pickerList('  ')}

Run \`shardwise <command> --help\` for a command's flags.`;

/** What follows a usage error: a short command's whole help, or where to find a long one's. */
const AFTER_USAGE_ERROR: Record<string, string> = {
  ingest: 'Run `shardwise ingest --help` for its flags.',
  replay: 'Run `shardwise replay --help` for its flags.',
  demo: DEMO_HELP,
  simulate: SIMULATE_HELP,
};

/**
 * Runs the CLI with `argv` (without node and script); resolves with the exit code. `signals`
 * (default the process) is where a load hears SIGINT and SIGTERM, `exit` how it leaves at once.
 */
export async function main(
  argv: string[],
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
  host: Pick<CommandIo, 'signals' | 'exit'> = {
    signals: process,
    exit: (code) => process.exit(code),
  },
): Promise<number> {
  const [command, ...rest] = argv;
  const io: CommandIo = { out, err, ...host };
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      out.write(`${HELP}\n`);
      return command === undefined ? 2 : 0;
    }
    if (command === 'ingest') return await ingestCommand(rest, io);
    if (command === 'replay') return await replayCommand(rest, io);
    if (command === 'demo') return await demo(rest, out);
    if (command === 'simulate') return await simulateCommand(rest, out);
    throw new UsageError(`unknown command "${command}"\n\n${HELP}`);
  } catch (error) {
    if (error instanceof UsageError || isShardwiseError(error, 'SHARDWISE_CONFIG')) {
      err.write(`${wrap(`shardwise: ${(error as Error).message}`)}\n`);
      if (command !== undefined && Object.hasOwn(AFTER_USAGE_ERROR, command)) {
        err.write(`\n${AFTER_USAGE_ERROR[command]}\n`);
      }
      return 2;
    }
    const system = typeof (error as { code?: unknown } | null)?.code === 'string';
    const text =
      error instanceof Error
        ? system
          ? error.message
          : (error.stack ?? error.message)
        : String(error);
    err.write(`${system ? wrap(`shardwise: ${text}`) : `shardwise: ${text}`}\n`);
    return 1;
  }
}

function isEntry(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  if (process.argv[2] === '__shards') {
    const { childMain } = await import('./shard-server.js');
    await childMain(Number(process.argv[3] ?? 8));
  } else {
    process.exitCode = await main(process.argv.slice(2));
  }
}
