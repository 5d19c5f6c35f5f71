/**
 * `shardwise simulate` as a new user runs it (`npm run simulate -- …`: tsx on the sources),
 * attacked on its flags and scenario files.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, stackFrames } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'shardwise-frontdoor-'));
function scenario(name: string, body: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(body));
  return file;
}
const fleet = [
  { id: 'a', latency: { type: 'exponential', mean: 10 }, capacity: 4 },
  { id: 'b', latency: { type: 'exponential', mean: 100 }, capacity: 4 },
];

describe('shardwise simulate: flags', () => {
  // --help: "--out FILE  write a report: .svg, or .html". A path that cannot be written is a bad
  // --out: today the whole simulation runs first, then writeFileSync's ENOENT escapes as
  // "shardwise: Error: ENOENT …" with its stack trace, and the message never names --out.
  it('--out in a directory that does not exist: a one-line error naming --out, no stack trace', async () => {
    const ran = await cli([
      'simulate',
      '--picker',
      'p2c',
      '--requests',
      '200',
      '--out',
      join(dir, 'no', 'such', 'r.svg'),
    ]);
    expect(ran.code).not.toBe(0);
    expect(stackFrames(ran.err)).toEqual([]);
    expect(ran.err).toContain('--out');
  });

  // --help: "--latency MS  mean service time, exponential (default 10)"; the flag spec takes
  // min 0, then the simulator refuses 0 as "bad scenario: `meanMs` must be a positive finite
  // number" — no scenario was given, and the flag the user typed is not named.
  it('--latency 0: the error names --latency, not a scenario field', async () => {
    const ran = await cli(['simulate', '--picker', 'p2c', '--requests', '200', '--latency', '0']);
    expect(ran.code).toBe(2);
    expect(ran.err.split('\n')[0]).toContain('--latency');
  });
});

describe('shardwise simulate: scenario files', () => {
  // The scenario's shards refuse unknown keys (by field name, as every shardwise option does:
  // DESIGN "Config validation that rejects unknown option names instead of ignoring them"), but
  // the top level ignores them: a typo'd "picker" or "request" silently runs the defaults
  // (three pickers, 20 000 requests) and exits 0.
  it('refuses an unknown top-level field (a typo) instead of silently running the defaults', async () => {
    const file = scenario('typo.json', { shards: fleet, picker: ['p2c'], request: 100, seed: 3 });
    const ran = await cli(['simulate', '--scenario', file]);
    expect(ran.out).not.toMatch(/^round-robin\s/m); // the defaults, not what was asked for
    expect(ran.code).toBe(2);
    expect(ran.err).toMatch(/picker|request/);
  });

  // --help: "--picker, --requests and --seed, when given, override its own"; the fleet flags
  // are the file's to give. (They were accepted and silently ignored.)
  it('--seed beside --scenario changes the numbers; a fleet flag beside it is refused', async () => {
    const file = scenario('seeded.json', { shards: fleet, arrivals: { rate: 50 }, requests: 500 });
    const one = await cli(['simulate', '--picker', 'random', '--scenario', file, '--seed', '1']);
    const again = await cli(['simulate', '--picker', 'random', '--scenario', file, '--seed', '1']);
    const two = await cli(['simulate', '--picker', 'random', '--scenario', file, '--seed', '2']);
    expect([one.code, again.code, two.code]).toEqual([0, 0, 0]);
    expect(again.out).toBe(one.out);
    expect(two.out).not.toBe(one.out);
    const fleetFlag = await cli(['simulate', '--scenario', file, '--shards', '4']);
    expect(fleetFlag.code).toBe(2);
    expect(fleetFlag.err.split('\n')[0]).toContain('--shards');
  });
});
