/**
 * Strict affinity's home lines through their own API (`park`, `leave`, `head`, `takeAll`,
 * `unavailable`) and the host they declare: a line per home, a retry at its front; the delivery
 * deadline armed only for an unavailable home and never extended by moving; a push-back's end
 * serves the line (re-armed when the push-back grew); early probes of an ejected home at 250 ms,
 * doubling to 2 s, never before its push-back ends; and no timer left once a line empties.
 */
import { describe, expect, it } from 'vitest';
import {
  EARLY_PROBE_FIRST_MS,
  EARLY_PROBE_MAX_MS,
  HomeLines,
} from '../../src/admission/home-lines.js';
import { KeyedState, Run } from '../../src/admission/run.js';
import { Shard } from '../../src/load/shard.js';
import { ManualClock } from '../../src/testing/index.js';

let made = 0;
function keyedRun(deadlineMs = Number.POSITIVE_INFINITY): Run<string> & { name: string } {
  const run = new Run<string>(
    async () => undefined,
    'k',
    undefined,
    Number.POSITIVE_INFINITY,
    true,
    0,
    undefined,
    0,
    () => {},
    () => {},
  ) as Run<string> & { name: string };
  run.name = `r${++made}`;
  run.keyed = new KeyedState<string>();
  run.deadlineMs = deadlineMs;
  return run;
}

function build() {
  const clock = new ManualClock();
  const log: string[] = [];
  const host = {
    clock,
    expired: (run: Run<string>, waitedMs: number) =>
      log.push(`expired ${(run as Run<string> & { name: string }).name} after ${waitedMs}`),
    serve: (shard: Shard<string>) => log.push(`serve ${shard.id}@${clock.now()}`),
    probeEarly: (shard: Shard<string>) => log.push(`probe ${shard.id}@${clock.now()}`),
  };
  const homeLines = new HomeLines<string>(host);
  const shard = (id: string) => new Shard<string>({ id, target: id }, 0, 1, clock, {});
  const eject = (s: Shard<string>) => {
    s.health.state = 'ejected';
    s.health.ejections++;
  };
  return { clock, log, lines: homeLines, shard, eject };
}

function lineOf(lines: HomeLines<string>, shard: Shard<string>): string[] {
  const out: string[] = [];
  for (let r = lines.head(shard); r !== undefined; r = r.next as Run<string> | undefined) {
    out.push((r as Run<string> & { name: string }).name);
  }
  return out;
}

describe('HomeLines: lines', () => {
  it('keeps a line per home, in order, with a retry at its front', () => {
    const { lines, shard } = build();
    const [a, b] = [shard('a'), shard('b')];
    const [r1, r2, r3, retry] = [keyedRun(), keyedRun(), keyedRun(), keyedRun()];
    lines.park(r1, a, 'capped', false);
    lines.park(r2, b, 'capped', false);
    lines.park(r3, a, 'capped', false);
    lines.park(retry, a, 'capped', true);
    expect(lineOf(lines, a)).toEqual([retry.name, r1.name, r3.name]);
    expect(lineOf(lines, b)).toEqual([r2.name]);
    expect(lines.size).toBe(4);
    expect([r1.state, r1.keyed?.waitingAt, r1.keyed?.waitReason]).toEqual(['queued', a, 'capped']);
    expect(lines.shards()).toEqual([a, b]);
  });

  it('takeAll empties every line, each in order, and forgets the lines', () => {
    const { lines, shard } = build();
    const [a, b] = [shard('a'), shard('b')];
    const [r1, r2, r3] = [keyedRun(), keyedRun(), keyedRun()];
    lines.park(r1, a, 'capped', false);
    lines.park(r2, b, 'capped', false);
    lines.park(r3, a, 'capped', false);
    expect(lines.takeAll()).toEqual([r1, r3, r2]);
    expect([lines.size, lines.shards(), r1.keyed?.waitingAt]).toEqual([0, [], undefined]);
  });

  it('leave of a run in no line changes nothing', () => {
    const { lines, shard } = build();
    const a = shard('a');
    const r1 = keyedRun();
    lines.park(r1, a, 'capped', false);
    lines.leave(keyedRun());
    lines.leave(r1);
    lines.leave(r1);
    expect(lines.size).toBe(0);
  });
});

describe('HomeLines: the delivery deadline', () => {
  it('a run waiting only for a slot has no deadline timer; one waiting for a pushed-back home has', () => {
    const { clock, lines, shard } = build();
    const a = shard('a');
    lines.park(keyedRun(1_000), a, 'capped', false);
    expect(clock.pendingTimers).toBe(0);
    a.holdPushBack(100);
    lines.park(keyedRun(1_000), a, 'pushback', false);
    // Its deadline, and the wake-up at the push-back's end.
    expect(clock.pendingTimers).toBe(2);
  });

  it('tells the host once when the deadline passes, with how long the run waited', () => {
    const { clock, log, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    clock.advance(200);
    const run = keyedRun(1_000);
    lines.park(run, a, 'ejected', false);
    clock.advance(10_000);
    expect(log.filter((l) => l.startsWith('expired'))).toEqual([`expired ${run.name} after 800`]);
  });

  it('moving between lines never extends the deadline', () => {
    const { clock, log, lines, shard, eject } = build();
    const [a, b] = [shard('a'), shard('b')];
    eject(a);
    eject(b);
    const run = keyedRun(1_000);
    lines.park(run, a, 'ejected', false);
    clock.advance(300);
    lines.leave(run);
    clock.advance(100);
    lines.park(run, b, 'ejected', false);
    clock.advance(599);
    expect(log.filter((l) => l.startsWith('expired'))).toEqual([]);
    clock.advance(1);
    expect(log.filter((l) => l.startsWith('expired'))).toEqual([`expired ${run.name} after 1000`]);
  });

  it('unavailable() puts the runs of a line that waited for a slot on their deadline', () => {
    const { clock, log, lines, shard } = build();
    const a = shard('a');
    const [r1, r2] = [keyedRun(500), keyedRun(700)];
    lines.park(r1, a, 'capped', false);
    lines.park(r2, a, 'capped', false);
    a.holdPushBack(10_000);
    lines.unavailable(a, 'pushback');
    expect([r1.keyed?.waitReason, r2.keyed?.waitReason]).toEqual(['pushback', 'pushback']);
    clock.advance(700);
    expect(log).toEqual([`expired ${r1.name} after 500`, `expired ${r2.name} after 700`]);
  });

  it('unavailable() of a shard with no line arms nothing', () => {
    const { clock, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    lines.unavailable(a, 'ejected');
    a.holdPushBack(100);
    lines.unavailable(a, 'pushback');
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('HomeLines: push-back', () => {
  it('serves the line when the home’s push-back ends, once', () => {
    const { clock, log, lines, shard } = build();
    const a = shard('a');
    a.holdPushBack(100);
    lines.park(keyedRun(), a, 'pushback', false);
    lines.park(keyedRun(), a, 'pushback', false);
    clock.advance(1_000);
    expect(log).toEqual(['serve a@100']);
  });

  it('a push-back that grew while the line waited is waited out, not served early nor stranded', () => {
    const { clock, log, lines, shard } = build();
    const a = shard('a');
    a.holdPushBack(100);
    lines.park(keyedRun(), a, 'pushback', false);
    clock.advance(60);
    a.holdPushBack(500);
    clock.advance(10_000);
    expect(log).toEqual(['serve a@560']);
  });

  it('an emptied line leaves no timer: no wake-up, no deadline', () => {
    const { clock, lines, shard } = build();
    const a = shard('a');
    a.holdPushBack(3_600_000);
    const run = keyedRun(120_000);
    lines.park(run, a, 'pushback', false);
    lines.leave(run);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('HomeLines: early probes of an ejected home', () => {
  it('asks for a probe after 250 ms, then 500 ms, 1 s, 2 s, and every 2 s while runs wait', () => {
    const { clock, log, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    lines.park(keyedRun(), a, 'ejected', false);
    const probes: number[] = [];
    for (let i = 0; i < 5; i++) {
      clock.runNext();
      probes.push(clock.now());
      // The probe failed: the shard is ejected again (the same ejection's count), runs still wait.
      lines.unavailable(a, 'ejected');
    }
    expect(EARLY_PROBE_FIRST_MS).toBe(250);
    expect(EARLY_PROBE_MAX_MS).toBe(2_000);
    expect(probes).toEqual([250, 750, 1_750, 3_750, 5_750]);
    expect(log).toEqual(probes.map((t) => `probe a@${t}`));
  });

  it('never asks before the home’s push-back ends', () => {
    const { clock, log, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    a.holdPushBack(1_000);
    lines.park(keyedRun(), a, 'ejected', false);
    clock.advance(5_000);
    expect(log).toEqual(['probe a@1000']);
  });

  it('a new ejection starts the count again at 250 ms', () => {
    const { clock, log, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    lines.park(keyedRun(), a, 'ejected', false);
    clock.runNext(); // 250
    lines.unavailable(a, 'ejected');
    clock.runNext(); // 750
    eject(a); // a second ejection
    lines.unavailable(a, 'ejected');
    clock.runNext();
    expect(log).toEqual(['probe a@250', 'probe a@750', 'probe a@1000']);
  });

  it('asks nothing once the home is no longer ejected or nobody waits', () => {
    const { clock, log, lines, shard, eject } = build();
    const a = shard('a');
    eject(a);
    lines.park(keyedRun(), a, 'ejected', false);
    a.health.state = 'probing';
    clock.advance(1_000);
    const b = shard('b');
    eject(b);
    const run = keyedRun();
    lines.park(run, b, 'ejected', false);
    lines.leave(run);
    clock.advance(1_000);
    expect(log).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
