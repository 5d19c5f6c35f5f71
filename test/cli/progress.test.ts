/**
 * The demo's progress and closing lines, as pure functions: the terminal line fits 79 columns
 * whatever the figures, the log line carries every figure, the winner line names the lowest p99.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type Row, winnerLine } from '../../src/cli/demo-report.js';
import {
  logLine,
  Progress,
  type ProgressFigures,
  TERMINAL_WIDTH,
  terminalLine,
} from '../../src/cli/progress.js';

function figures(shards: number, written: number, extra: Partial<ProgressFigures> = {}) {
  const perShard = Array.from({ length: shards }, (_, i) =>
    i === 2 ? 1 : Math.floor(written / shards),
  );
  return { written, failed: 0, inFlight: 64, queued: 64, retries: 0, perShard, ...extra };
}

describe('terminalLine', () => {
  it('labels each figure and lists every shard share when 8 shards fit', () => {
    const line = terminalLine(figures(8, 41_000), 100_000, 12_345);
    expect(line).toBe(
      '41% written  12,345/s  64 in flight  64 queued  share % 13 13 0 13 13 13 13 13',
    );
    expect(line.length).toBeLessThanOrEqual(TERMINAL_WIDTH);
  });

  it('never passes 79 columns: many shards or big figures fall back to the share range', () => {
    for (const shards of [1, 3, 8, 16, 32, 200]) {
      for (const rate of [0, 999, 99_999, 12_345_678]) {
        const line = terminalLine(
          figures(shards, 100_000, { inFlight: 1_000, queued: 10_000 }),
          100_000,
          rate,
        );
        expect(line.length).toBeLessThanOrEqual(TERMINAL_WIDTH);
        expect(line).toContain('written');
      }
    }
    const wide = terminalLine(figures(32, 50_000), 100_000, 5_000);
    expect(wide).toMatch(/share % 0–3$/);
  });
});

describe('logLine', () => {
  it('carries every figure in full, the picker first', () => {
    const line = logLine('p2c', figures(3, 3_000, { failed: 2, retries: 7 }), 10_000, 2_500);
    expect(line).toBe(
      'p2c: 3,000/10,000 written, 2,500 records/s, 64 in flight, 64 queued, 7 retries, 2 failed, share % by shard 0:33 1:33 2:0',
    );
  });
});

describe('Progress', () => {
  function sink() {
    let text = '';
    const out = new Writable({
      write(chunk, _encoding, callback) {
        text += String(chunk);
        callback();
      },
    });
    return { out, text: () => text };
  }

  it('outside a terminal writes a full entry per interval and a last one, wrapped to 80 columns, never \\r', () => {
    const { out, text } = sink();
    const progress = new Progress(out, { picker: 'p2c', total: 100, tty: false, startMs: 0 });
    progress.update(1_000, () => figures(2, 10));
    progress.update(3_000, () => figures(2, 30));
    progress.update(4_000, () => figures(2, 40));
    progress.update(6_000, () => figures(2, 60));
    progress.finish(10_000, figures(2, 100));
    const lines = text().split('\n').filter(Boolean);
    expect(lines).toEqual([
      'p2c: 30/100 written, 10 records/s, 64 in flight, 64 queued, 0 retries, 0 failed,',
      '  share % by shard 0:50 1:50',
      'p2c: 60/100 written, 10 records/s, 64 in flight, 64 queued, 0 retries, 0 failed,',
      '  share % by shard 0:50 1:50',
      'p2c: 100/100 written, 10 records/s, 64 in flight, 64 queued, 0 retries,',
      '  0 failed, share % by shard 0:50 1:50',
    ]);
    expect(text()).not.toContain('\r');
  });

  it('in a terminal redraws one line in place and ends it with a newline', () => {
    const { out, text } = sink();
    const progress = new Progress(out, { picker: 'p2c', total: 100, tty: true, startMs: 0 });
    progress.update(100, () => figures(2, 10));
    progress.update(250, () => figures(2, 20));
    progress.finish(500, figures(2, 100));
    expect(text()).toBe(
      'p2c: 100 records\n' +
        '\r\x1b[2K20% written  80/s  64 in flight  64 queued  share % 50 50' +
        '\r\x1b[2K100% written  200/s  64 in flight  64 queued  share % 50 50\n',
    );
  });
});

describe('winnerLine', () => {
  const row = (picker: string, p99: number): Row => ({
    picker,
    seconds: 1,
    rate: 1,
    p50: 1,
    p99,
    slowShare: 0,
    retries: 0,
    ejections: 0,
    failed: 0,
    lost: 0,
  });

  it('names the lowest p99 and its margin over the runner-up', () => {
    expect(winnerLine([row('round-robin', 43.6), row('peak-ewma', 28.5), row('p2c', 57.0)])).toBe(
      'winner at p99: peak-ewma, 28.5 ms vs 43.6 ms for round-robin, the runner-up (1.53× better)',
    );
  });

  it('says so for a tie, a single picker, or none', () => {
    expect(winnerLine([row('a', 10.01), row('b', 10.04), row('c', 20)])).toBe(
      'winner at p99: none, a and b tie at 10.0 ms',
    );
    expect(winnerLine([row('a', 10)])).toBe('winner at p99: a, the only picker run (10.0 ms)');
    expect(winnerLine([])).toBe('winner at p99: none (no picker ran)');
  });
});
