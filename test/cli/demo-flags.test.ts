/**
 * `shardwise demo` as a new user runs it (`npm run demo -- …`: tsx on the sources), attacked on
 * its flags and on the truth of what it prints.
 */
import { describe, expect, it } from 'vitest';
import { cli, stackFrames, unwrap } from './run-cli.js';

describe('shardwise demo: flags', () => {
  // docs/reference.md: "bad flags exit with code 2, and so do counts past what a run can hold or serve
  // (`demo`: up to 10 000 000 records and 100 shards …)". --batch-records is a record count too:
  // by default 10 × --records, so `--records 10000000` asks for 100 000 000 batched records, past
  // what the demo's shard process can even remember (a Set holds at most 2^24 ids).
  it('refuses --batch-records past 10 000 000 with exit code 2 before starting any shard', async () => {
    const ran = await cli(
      ['demo', '--records', '1', '--picker', 'round-robin', '--batch-records', '20000000'],
      20_000,
    );
    expect(ran.timedOut, `still running after 20 s; printed:\n${ran.out.slice(0, 400)}`).toBe(
      false,
    );
    expect(ran.code).toBe(2);
    expect(ran.err).toContain('--batch-records');
  }, 30_000);

  // docs/reference.md: "bad flags exit with code 2". These pass the flag parser (Number.isInteger(1e300)) and
  // blow up later inside the balancer with a ConfigError: exit 1 and a stack trace — for
  // --batch-size only after every one-record-per-run pass has run.
  it.each([
    ['--concurrency', '1e300'],
    ['--batch-size', '1e300'],
  ])(
    'refuses %s %s with exit code 2 and a one-line message, no stack trace',
    async (flag, value) => {
      const ran = await cli(
        ['demo', '--records', '5', '--picker', 'round-robin', '--batch-records', '10', flag, value],
        45_000,
      );
      expect(ran.timedOut).toBe(false);
      expect(stackFrames(ran.err)).toEqual([]);
      expect(ran.code).toBe(2);
      expect(ran.err).toContain(flag);
    },
    60_000,
  );

  // demo --help: "Midway one shard turns slow (+20 ms a request); for a while another answers
  // 503", and --shards N is "from 3 to 100". With 3 shards both are shard-2 (2 % 3 and 5 % 3).
  it('with --shards 3 (allowed) the slow shard and the failing shard are two shards', async () => {
    const ran = await cli(
      [
        'demo',
        '--shards',
        '3',
        '--records',
        '20',
        '--picker',
        'round-robin',
        '--batch-records',
        '0',
      ],
      45_000,
    );
    expect(ran.code).toBe(0);
    const m = /(shard-\d+) turns slow .*, (shard-\d+) answers 503/.exec(ran.out);
    expect(m, ran.out).not.toBeNull();
    expect(m![2]).not.toBe(m![1]);
  }, 60_000);
});

describe('shardwise demo: what it prints is true', () => {
  // docs/reference.md: the progress shows "each shard's share of the records". In the batched pass the demo
  // computes it as (requests × batch size) ÷ written, so partial batches (keyed pickers batch per
  // home shard, the source's tail) and failed attempts are counted as full batches of records.
  it('the batched pass prints per-shard shares of the records written: each ≤ 100 %, summing to ~100 %', async () => {
    const ran = await cli(
      ['demo', '--records', '20', '--picker', 'consistent-hash:jump', '--batch-records', '100'],
      45_000,
    );
    expect(ran.code).toBe(0);
    const last = unwrap(ran.out)
      .split('\n')
      .filter((line) => /^consistent-hash:jump batched: [\d,]+\/100 written/.test(line))
      .at(-1);
    expect(last, ran.out).toBeDefined();
    expect(last).toMatch(/^consistent-hash:jump batched: 100\/100 written/);
    const shares = [...last!.matchAll(/ (\d+):(\d+)/g)].map((m) => Number(m[2]));
    expect(shares).toHaveLength(8);
    for (const share of shares) expect(share).toBeLessThanOrEqual(100);
    const sum = shares.reduce((a, b) => a + b, 0);
    expect(sum).toBeGreaterThanOrEqual(100 - shares.length);
    expect(sum).toBeLessThanOrEqual(100 + shares.length);
  }, 60_000);
});
