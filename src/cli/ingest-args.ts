/**
 * The command line of `shardwise ingest` and `shardwise replay`: their flags, their help, and
 * the checks that turn them into the settings of a load — every flag checked before a file is
 * opened or a shard called, each error naming its flag (exit code 2). Header values are secrets:
 * no message says them.
 */
import { resolve } from 'node:path';
import { ConfigError } from '../base/errors.js';
import type { Picker } from '../base/types.js';
import { toTarget } from '../http/options.js';
import { checkHeaders, checkPath } from '../http/request-checks.js';
import { type CompressionOption, resolveCompression } from '../transport/compression.js';
import { type FlagSpec, parseArgs, UsageError } from './args.js';
import { keyField } from './key-field.js';
import { pickerFactory, pickerList } from './pickers.js';

/** The two commands that load records into shards. */
export type LoadCommand = 'ingest' | 'replay';

/** What a load is asked to do, checked. */
export interface LoadSettings {
  command: LoadCommand;
  /** The files read, in order, made absolute (a resume from another directory finds them). */
  files: string[];
  origins: string[];
  path: string;
  /** `--key`: the field, and the key function reading it. */
  key: { field: string; of: (record: unknown) => string } | undefined;
  picker: () => Picker;
  pickerName: string;
  batch: { maxRecords: number; maxBytes: number; lingerMs: number };
  headers: Record<string, string>;
  /** `--compression`: each request body's codec (and level), if any. */
  compression: CompressionOption | undefined;
  timeoutMs: number | undefined;
  deliveryTimeoutMs: number | undefined;
  checkpoint: { path: string; everyMs: number } | undefined;
  deadLetter: string | undefined;
  deadLetterUncertain: boolean;
  json: boolean;
}

const DAY_MS = 86_400_000;

/** The flags both commands take. */
export const LOAD_FLAGS: Record<string, FlagSpec> = {
  to: { type: 'list' },
  path: { type: 'string' },
  key: { type: 'string' },
  picker: { type: 'string' },
  batch: { type: 'int', min: 1, max: 1_000_000 },
  'batch-bytes': { type: 'int', min: 1, max: 1 << 30 },
  linger: { type: 'int', min: 0, max: 60_000 },
  header: { type: 'strings' },
  compression: { type: 'string' },
  timeout: { type: 'int', min: 1, max: DAY_MS },
  'delivery-timeout': { type: 'int', min: 1, max: 7 * DAY_MS },
  checkpoint: { type: 'string' },
  'checkpoint-every': { type: 'int', min: 1, max: DAY_MS },
  'dead-letter': { type: 'string' },
  'dead-letter-uncertain': { type: 'bool' },
  json: { type: 'bool' },
  help: { type: 'bool' },
};

const DEFAULT_PICKER = 'peak-ewma';
const KEYED_DEFAULT_PICKER = 'consistent-hash:ring';

const FLAGS_HELP = `  --to URL[,URL…]        the shards: origins (http://host:port), comma
                         separated (required)
  --path PATH            request path on every shard, query included
                         (default /)
  --key FIELD            route each record by a JSON field (a.b: nested);
                         a record without it fails
  --picker NAME          how a shard is chosen (default ${DEFAULT_PICKER};
                         with --key, ${KEYED_DEFAULT_PICKER})
  --batch N              records per request at most (default 500)
  --batch-bytes N        bytes per request at most (default 1048576)
  --linger MS            how long a batch waits to fill (default 50)
  --header 'NAME: VALUE' a request header; repeatable (never printed)
  --compression CODEC[:LEVEL]
                         compress each request body: gzip, zstd or br
                         (zstd needs @mongodb-js/zstd installed)
  --timeout MS           bound on one request (default 60000)
  --delivery-timeout MS  how long a record may wait in all, retries and
                         push-back included (default 120000)
  --checkpoint FILE      keep the place reached in FILE, and resume from it
                         when it exists
  --checkpoint-every MS  time between two saves (default 1000)
  --dead-letter FILE     append each record that failed, one NDJSON line
                         with its error (shardwise replay sends them again)
  --dead-letter-uncertain
                         the uncertain ones too (sent, and no answer came)
  --json                 the summary as JSON on stdout
  --help                 this text

Progress goes to stderr: in a terminal one line redrawn (% read, records/s,
MB/s, ETA, each shard's share, why a shard waits), in a log an entry every
5 s. Ctrl-C or SIGTERM stops reading; what is in flight settles, the
checkpoint is saved and the summary printed. A second one stops at once
(what was in flight is sent again on resume).

Exit codes: 0 every record written; 1 some failed or are uncertain, or the
load stopped on an error; 2 usage or configuration; 3 stopped by a signal.

Pickers:
${pickerList('  ')}`;

export const INGEST_HELP = `Usage: shardwise ingest FILE… --to URL[,URL…] [flags]

Sends the lines of JSONL files (.jsonl.gz too), in order, to HTTP ingest
shards in batches: one request per batch, its body the lines as they are in
the files (NDJSON). With --checkpoint a load killed at any moment resumes
where it stood, losing no record.

${FLAGS_HELP}`;

export const REPLAY_HELP = `Usage: shardwise replay DEADLETTER… --to URL[,URL…] [flags]

Sends again the records of dead-letter files (what --dead-letter kept), as
they were first taken: a line as the same line. Those that fail again go to
this run's own --dead-letter, another file. Uncertain records may have been
stored: replaying them may store them twice.

${FLAGS_HELP}`;

/** The settings of `command`'s argv; `undefined` for `--help`. */
export function loadSettings(command: LoadCommand, argv: string[]): LoadSettings | undefined {
  const { flags, operands } = parseArgs(argv, LOAD_FLAGS);
  if (flags.help === true) return undefined;
  const inputs = command === 'ingest' ? 'FILE' : 'DEADLETTER';
  if (operands.length === 0) throw new UsageError(`${command} needs at least one ${inputs}`);
  for (const operand of operands) {
    if (operand.startsWith('-') && operand !== '-') {
      throw new UsageError(
        `unknown flag ${operand} (flags start with --; a file named so: -- ${operand})`,
      );
    }
  }
  const files = operands.map((f) => resolve(f));
  const origins = checkOrigins(flags.to as string[] | undefined);
  const path = (flags.path as string | undefined) ?? '/';
  checkPath(path, '--path');
  const field = flags.key as string | undefined;
  if (field !== undefined && (field === '' || field.split('.').includes(''))) {
    throw new UsageError(`--key must name a field (a.b for a nested one), got "${field}"`);
  }
  const pickerName =
    (flags.picker as string | undefined) ??
    (field === undefined ? DEFAULT_PICKER : KEYED_DEFAULT_PICKER);
  const picker = pickerFactory(pickerName);
  const keyed = picker().keyed === true;
  if (field !== undefined && !keyed) {
    throw new UsageError(
      `--key routes records by a field: it needs a consistent-hash picker, not --picker ${pickerName}`,
    );
  }
  if (field === undefined && keyed) {
    throw new UsageError(`--picker ${pickerName} routes every record by its key: give --key FIELD`);
  }
  const checkpointPath = flags.checkpoint as string | undefined;
  if (flags['checkpoint-every'] !== undefined && checkpointPath === undefined) {
    throw new UsageError('--checkpoint-every needs --checkpoint FILE');
  }
  const deadLetter = flags['dead-letter'] as string | undefined;
  if (flags['dead-letter-uncertain'] === true && deadLetter === undefined) {
    throw new UsageError('--dead-letter-uncertain needs --dead-letter FILE');
  }
  const settings: LoadSettings = {
    command,
    files,
    origins,
    path,
    key: field === undefined ? undefined : { field, of: keyField(field) },
    picker,
    pickerName,
    batch: {
      maxRecords: (flags.batch as number | undefined) ?? 500,
      maxBytes: (flags['batch-bytes'] as number | undefined) ?? 1 << 20,
      lingerMs: (flags.linger as number | undefined) ?? 50,
    },
    headers: checkHeaderFlags((flags.header as string[] | undefined) ?? []),
    compression: compressionFlag(flags.compression as string | undefined),
    timeoutMs: flags.timeout as number | undefined,
    deliveryTimeoutMs: flags['delivery-timeout'] as number | undefined,
    checkpoint:
      checkpointPath === undefined
        ? undefined
        : {
            path: nonEmpty('--checkpoint', checkpointPath),
            everyMs: (flags['checkpoint-every'] as number | undefined) ?? 1_000,
          },
    deadLetter: deadLetter === undefined ? undefined : nonEmpty('--dead-letter', deadLetter),
    deadLetterUncertain: flags['dead-letter-uncertain'] === true,
    json: flags.json === true,
  };
  checkDistinctFiles(settings, inputs);
  return settings;
}

/** `--compression gzip` or `zstd:3`: checked as the `compression` option is. */
function compressionFlag(flag: string | undefined): CompressionOption | undefined {
  if (flag === undefined) return undefined;
  const [codec = '', level, extra] = flag.split(':');
  const option = level === undefined ? codec : { codec, level: Number(level) };
  if (extra !== undefined || (level !== undefined && !/^-?\d+$/.test(level))) {
    throw new UsageError(`--compression must be CODEC or CODEC:LEVEL (zstd:3), got "${flag}"`);
  }
  try {
    resolveCompression('--compression', option);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message.replace(/`/g, ''));
    throw error;
  }
  return option as CompressionOption;
}

function nonEmpty(flag: string, path: string): string {
  if (path === '') throw new UsageError(`${flag} needs a file name`);
  return resolve(path);
}

function checkOrigins(list: string[] | undefined): string[] {
  if (list === undefined || list.length === 0) {
    throw new UsageError(
      '--to is required: the shards, as origins (http://host:port), comma separated',
    );
  }
  const seen = new Set<string>();
  return list.map((url, i) => {
    const { origin } = toTarget(list.length === 1 ? '--to' : `--to (URL ${i + 1})`, url);
    if (seen.has(origin)) throw new UsageError(`--to names ${origin} twice`);
    seen.add(origin);
    return origin;
  });
}

/** Headers that say how the body travels: the HTTP client's to set, never a flag's. */
const OWN_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'content-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
]);

/**
 * `--header 'Name: value'` flags as a headers object, checked as `http.ingest` checks `headers`;
 * no message quotes a value.
 */
function checkHeaderFlags(flags: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const flag of flags) {
    const colon = flag.indexOf(':');
    if (colon <= 0) {
      throw new UsageError(`--header must be 'Name: value' (a name, a colon, the value)`);
    }
    const name = flag.slice(0, colon).trim();
    const value = flag.slice(colon + 1).trim();
    if (OWN_HEADERS.has(name.toLowerCase())) {
      throw new UsageError(
        `--header ${name} is the command's own to set (each request's body sets it)`,
      );
    }
    if (Object.keys(headers).some((n) => n.toLowerCase() === name.toLowerCase())) {
      throw new UsageError(`--header ${name} is given twice`);
    }
    headers[name] = value;
  }
  try {
    checkHeaders(headers, '--header');
  } catch (error) {
    // The check names the header and redacts its value; the message is the flag's.
    if (error instanceof ConfigError) throw new UsageError(error.message.replace(/`/g, ''));
    throw error;
  }
  return headers;
}

/** A checkpoint or a dead-letter file that is an input, or each other, would destroy data. */
function checkDistinctFiles(s: LoadSettings, inputs: string): void {
  const roles: [string, string | undefined][] = [
    ['--checkpoint', s.checkpoint?.path],
    ['--dead-letter', s.deadLetter],
  ];
  for (const [flag, path] of roles) {
    if (path !== undefined && s.files.includes(path)) {
      throw new UsageError(`${flag} must be another file than the ${inputs} read`);
    }
  }
  if (s.checkpoint !== undefined && s.checkpoint.path === s.deadLetter) {
    throw new UsageError('--checkpoint and --dead-letter must be two files');
  }
}
