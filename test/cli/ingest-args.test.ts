/**
 * `shardwise ingest` and `shardwise replay` refuse a bad command line before a file is read or a
 * shard called: exit code 2, a message naming the flag, never a header's value, never a stack.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeLines } from './load-helpers.js';
import { stackFrames, unwrap } from './run-cli.js';

let dir: string;
let file: string;
const TO = 'http://127.0.0.1:9';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardwise-ingest-args-'));
  file = join(dir, 'in.jsonl');
  writeLines(file, 0, 10);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('shardwise ingest: usage errors exit 2 naming the flag', () => {
  it.each([
    [['ingest'], 'ingest needs at least one FILE'],
    [['replay', '--to', TO], 'replay needs at least one DEADLETTER'],
    [['ingest', 'FILE'], '--to is required'],
    [['ingest', 'FILE', '--to', 'ftp://x'], '`--to` must use http: or https:'],
    [['ingest', 'FILE', '--to', 'http://h:1/ingest'], 'without a path'],
    [['ingest', 'FILE', '--to', `${TO},http://127.0.0.1:9`], '--to names http://127.0.0.1:9 twice'],
    [['ingest', 'FILE', '--to', 'http://u:pw@h:1'], 'must not carry credentials'],
    [
      ['ingest', 'FILE', '--to', TO, '--path', 'ingest'],
      '`--path` must be a string starting with "/"',
    ],
    [
      ['ingest', 'FILE', '--to', TO, '--batch', '0'],
      '--batch must be an integer from 1 to 1000000',
    ],
    [['ingest', 'FILE', '--to', TO, '--batch-bytes', '1.5'], '--batch-bytes must be an integer'],
    [
      ['ingest', 'FILE', '--to', TO, '--linger', '-1'],
      '--linger must be an integer from 0 to 60000',
    ],
    [['ingest', 'FILE', '--to', TO, '--timeout', '0'], '--timeout must be an integer'],
    [['ingest', 'FILE', '--to', TO, '--delivery-timeout', 'soon'], '--delivery-timeout must be'],
    [['ingest', 'FILE', '--to', TO, '--picker', 'nope'], 'unknown picker "nope"'],
    [
      ['ingest', 'FILE', '--to', TO, '--picker', 'consistent-hash:maglev'],
      '--picker consistent-hash:maglev routes every record by its key: give --key FIELD',
    ],
    [
      ['ingest', 'FILE', '--to', TO, '--key', 'user', '--picker', 'round-robin'],
      '--key routes records by a field: it needs a consistent-hash picker',
    ],
    [['ingest', 'FILE', '--to', TO, '--key', 'a..b'], '--key must name a field'],
    [['ingest', 'FILE', '--to', TO, '--compression', 'lz4'], '--compression'],
    [['ingest', 'FILE', '--to', TO, '--compression', 'gzip:x'], '--compression must be CODEC'],
    [['ingest', 'FILE', '--to', TO, '--compression', 'gzip:99'], '--compression'],
    [
      ['ingest', 'FILE', '--to', TO, '--dead-letter-uncertain'],
      '--dead-letter-uncertain needs --dead-letter',
    ],
    [
      ['ingest', 'FILE', '--to', TO, '--checkpoint-every', '10'],
      '--checkpoint-every needs --checkpoint',
    ],
    [['ingest', 'FILE', '--to', TO, '--path', '/a', '--path', '/b'], '--path is given twice'],
    [['ingest', 'FILE', '--to', TO, '--colour', 'red'], 'unknown flag --colour'],
    [['ingest', 'FILE', '--to', TO, '-v'], 'unknown flag -v'],
    [['ingest', 'FILE', '--to', TO, '--header', 'no colon here'], "--header must be 'Name: value'"],
    [
      ['ingest', 'FILE', '--to', TO, '--header', 'A: 1', '--header', 'a: 2'],
      '--header a is given twice',
    ],
    [
      ['ingest', 'FILE', '--to', TO, '--header', 'Content-Length: 5'],
      "--header Content-Length is the command's own to set",
    ],
  ])('%j', async (argv, message) => {
    const args = argv.map((a) => (a === 'FILE' ? file : a));
    const { code, err: printed, out } = await runCli(args);
    const err = unwrap(printed);
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(out).toBe('');
    expect(stackFrames(err)).toEqual([]);
  });

  it('never prints a header value, however the header is wrong', async () => {
    const secret = 'Bearer s3cr3t-t0k3n';
    for (const header of [
      `Bad Name: ${secret}`,
      `X-Token: ${secret}\r\nx: y`,
      `Content-Length: ${secret}`,
      `Host: ${secret}, x`,
    ]) {
      const { code, err } = await runCli(['ingest', file, '--to', TO, '--header', header]);
      expect(code).toBe(2);
      expect(err).not.toContain('s3cr3t');
    }
  });

  it('refuses files that are not there, directories, and outputs that would overwrite an input', async () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub, { recursive: true });
    const missing = await runCli(['ingest', join(dir, 'none.jsonl'), '--to', TO]);
    expect(missing.code).toBe(2);
    expect(unwrap(missing.err)).toContain(`cannot read ${join(dir, 'none.jsonl')}`);
    const directory = await runCli(['ingest', sub, '--to', TO]);
    expect(directory.code).toBe(2);
    expect(unwrap(directory.err)).toContain('is not a file');
    for (const flag of ['--checkpoint', '--dead-letter']) {
      const same = await runCli(['ingest', file, '--to', TO, flag, file]);
      expect(same.code).toBe(2);
      expect(unwrap(same.err)).toContain(`${flag} must be another file than the FILE read`);
    }
    const both = join(dir, 'both');
    const clash = await runCli([
      'ingest',
      file,
      '--to',
      TO,
      '--checkpoint',
      both,
      '--dead-letter',
      both,
    ]);
    expect(clash.code).toBe(2);
    expect(unwrap(clash.err)).toContain('--checkpoint and --dead-letter must be two files');
    const replay = await runCli(['replay', file, '--to', TO, '--dead-letter', file]);
    expect(replay.code).toBe(2);
    expect(unwrap(replay.err)).toContain(
      '--dead-letter must be another file than the DEADLETTER read',
    );
  });

  it('refuses a checkpoint that is corrupt, that another load saved, or whose file changed', async () => {
    const corrupt = join(dir, 'corrupt.ckpt');
    writeFileSync(corrupt, '{"version":1,"posit');
    const bad = await runCli(['ingest', file, '--to', TO, '--checkpoint', corrupt]);
    expect(bad.code).toBe(2);
    expect(unwrap(bad.err)).toContain(`--checkpoint: checkpoint ${corrupt} is corrupt`);
    const other = join(dir, 'other.ckpt');
    writeFileSync(
      other,
      JSON.stringify({
        version: 1,
        position: { file: join(dir, 'elsewhere.jsonl'), fileIndex: 0, offset: 10, line: 1 },
        records: 1,
        written: 1,
        failed: 0,
        uncertain: 0,
        savedAt: new Date(0).toISOString(),
        files: [join(dir, 'elsewhere.jsonl')],
      }),
    );
    const foreign = await runCli(['ingest', file, '--to', TO, '--checkpoint', other]);
    expect(foreign.code).toBe(2);
    expect(unwrap(foreign.err)).toContain(
      `--checkpoint ${other} was saved by a load of other files`,
    );
    // The same file, changed since: the position no longer ends a line.
    const changed = join(dir, 'changed.ckpt');
    writeFileSync(
      changed,
      JSON.stringify({
        version: 1,
        position: { file, fileIndex: 0, offset: 7, line: 1 },
        records: 1,
        written: 1,
        failed: 0,
        uncertain: 0,
        savedAt: new Date(0).toISOString(),
        files: [file],
      }),
    );
    const moved = await runCli(['ingest', file, '--to', TO, '--checkpoint', changed]);
    expect(moved.code).toBe(2);
    expect(unwrap(moved.err)).toContain(`--checkpoint ${changed} does not fit the files`);
  });

  it('refuses a dead-letter file that cannot be opened, before any record is sent', async () => {
    const notADirectory = join(dir, 'in.jsonl', 'dead.ndjson');
    const { code, err } = await runCli([
      'ingest',
      file,
      '--to',
      TO,
      '--dead-letter',
      notADirectory,
    ]);
    expect(code).toBe(2);
    expect(err).toContain(`--dead-letter ${notADirectory}`);
  });

  it('prints its help with exit code 0, and points to it after a usage error', async () => {
    for (const command of ['ingest', 'replay']) {
      const help = await runCli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.out).toContain(`Usage: shardwise ${command}`);
      for (const flag of ['--to', '--key', '--checkpoint', '--dead-letter', '--header', '--json']) {
        expect(help.out).toContain(flag);
      }
      const wrong = await runCli([command, '--frob']);
      expect(wrong.err).toContain(`Run \`shardwise ${command} --help\` for its flags.`);
    }
  });
});
