/**
 * The Membership room through its own API (`start`, `add`, `remove`, `set`, `released`, `member`,
 * `close`): who is in, in a stable order; the version bumped once per install; the host told once
 * per change and the transport's hooks called once each; a membership the picker cannot build
 * changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, ShardRemovedError } from '../../src/base/errors.js';
import type { Picker, ShardSpec, ShardState } from '../../src/base/types.js';
import { Membership, type MembershipHooks } from '../../src/core/membership.js';
import { Shard } from '../../src/load/shard.js';
import { ManualClock } from '../../src/testing/index.js';
import { flush } from '../helpers.js';

type Spec = ShardSpec<string>;
const spec = (id: string, extra: Partial<Spec> = {}): Spec => ({ id, target: id, ...extra });

/** A membership with a host and hooks that write down every call. */
function membership(
  options: {
    hooks?: MembershipHooks<string>;
    rebuild?: (shards: readonly ShardState[]) => void;
  } = {},
) {
  const clock = new ManualClock();
  const log: string[] = [];
  const aborted: [string, unknown][] = [];
  const picker: Picker = {
    name: 'first',
    pick: (shards) => shards[0],
    rebuild: (shards) => {
      options.rebuild?.(shards);
      log.push(`rebuild ${shards.map((s) => s.id).join(',')}`);
    },
  };
  const room: Membership<string> = new Membership<string>(
    {
      picker,
      newShard: (s, index) => new Shard<string>(s, index, 2, clock, {}),
      installed: (shards) =>
        log.push(`installed ${shards.map((s) => s.id).join(',')} v${room.version}`),
      abortAttempts: (shard, error) => aborted.push([shard.id, error]),
      changed: (added, removed, drained) =>
        log.push(
          `changed +${added.map((s) => s.id).join(',')} -${removed.map((s) => s.id).join(',')} ${drained}`,
        ),
    },
    options.hooks ?? {},
  );
  return { room, log, aborted };
}

const order = (room: Membership<string>) => room.shards.map((s) => `${s.id}@${s.index}`);

describe('Membership: the first membership', () => {
  it('installs the shards in order, version 1, and tells the hooks once — no change event', () => {
    const added: string[][] = [];
    const { room, log } = membership({ hooks: { added: (s) => added.push(s.map((x) => x.id)) } });
    room.start([spec('a'), spec('b')]);
    expect(order(room)).toEqual(['a@0', 'b@1']);
    expect(room.version).toBe(1);
    expect(log).toEqual(['rebuild a,b', 'installed a,b v1']);
    expect(added).toEqual([['a', 'b']]);
  });

  it('prepare turns a transport’s spec into a core one and checks the list', () => {
    const { room } = membership({
      hooks: {
        prepare: (given: unknown, field: string) => spec(`${String(given)}-${field}`),
      } as never,
    });
    expect(room.prepare('shards', ['x']).map((s) => s.id)).toEqual(['x-shards[0]']);
    expect(() => room.prepare('shards', [])).toThrow(ConfigError);
  });
});

describe('Membership: add', () => {
  it('adds at the end: one version bump, the hook and the host told once each', () => {
    const added: string[][] = [];
    const { room, log } = membership({ hooks: { added: (s) => added.push(s.map((x) => x.id)) } });
    room.start([spec('a')]);
    log.length = 0;
    room.add(spec('b'));
    expect(order(room)).toEqual(['a@0', 'b@1']);
    expect(room.version).toBe(2);
    expect(log).toEqual(['rebuild a,b', 'installed a,b v2', 'changed +b - true']);
    expect(added).toEqual([['a'], ['b']]);
  });

  it('refuses a duplicate id or a bad spec and changes nothing', () => {
    const { room, log } = membership();
    room.start([spec('a')]);
    log.length = 0;
    expect(() => room.add(spec('a'))).toThrow(/shard\.id.*must be unique/);
    expect(() => room.add({ id: '', target: 'x' })).toThrow(ConfigError);
    expect({ version: room.version, log, order: order(room) }).toEqual({
      version: 1,
      log: [],
      order: ['a@0'],
    });
  });

  it('a picker that cannot build the new membership leaves the old one, indexes included', () => {
    let refuse = false;
    const { room } = membership({
      rebuild: () => {
        if (refuse) throw new ConfigError('picker', 'refuses', 'x');
      },
    });
    room.start([spec('a'), spec('b')]);
    const [a, b] = room.shards;
    refuse = true;
    expect(() => room.add(spec('c'))).toThrow(ConfigError);
    expect(() => room.remove('a', true)).toThrow(ConfigError);
    expect(room.version).toBe(1);
    expect(room.shards).toEqual([a, b]);
    expect(order(room)).toEqual(['a@0', 'b@1']);
    expect(a!.removed).toBe(false);
  });
});

describe('Membership: remove', () => {
  it('throws for an id that is not a member, as for any bad call (the balancer rejects with it)', () => {
    const { room } = membership();
    room.start([spec('a')]);
    expect(() => room.remove('zz', true)).toThrow(/id.*must name a member shard/);
  });

  it('takes the shard out before anyone is told, renumbers the rest, and resolves at once when idle', async () => {
    const { room, log } = membership();
    room.start([spec('a'), spec('b'), spec('c')]);
    const a = room.shards[0]!;
    log.length = 0;
    await room.remove('a', true);
    expect(order(room)).toEqual(['b@0', 'c@1']);
    expect(a.removed).toBe(true);
    expect(room.version).toBe(2);
    expect(log).toEqual(['rebuild b,c', 'installed b,c v2', 'changed + -a true']);
  });

  it('with drain, resolves only when the removed shard’s last call is released', async () => {
    const { room, aborted } = membership();
    room.start([spec('a'), spec('b')]);
    const a = room.shards[0]!;
    a.startAttempt(0);
    let done = false;
    void room.remove('a', true).then(() => {
      done = true;
    });
    await flush();
    expect(done).toBe(false);
    expect(aborted).toEqual([]);
    // A removed shard with calls still running is still found, for their load reports.
    expect(room.member('a')).toBe(a);
    a.endAttempt(0, false);
    room.released(a);
    await flush();
    expect(done).toBe(true);
    expect(() => room.member('a')).toThrow(ConfigError);
  });

  it('without drain, asks the host once to abort its attempts with ShardRemovedError', async () => {
    const { room, aborted, log } = membership();
    room.start([spec('a'), spec('b')]);
    room.remove('b', false);
    expect(aborted).toHaveLength(1);
    expect(aborted[0]![0]).toBe('b');
    expect(aborted[0]![1]).toBeInstanceOf(ShardRemovedError);
    expect(log.at(-1)).toBe('changed + -b false');
  });

  it('calls the removed hook once, and waits for what it returns', async () => {
    const calls: [string, boolean][] = [];
    let release!: () => void;
    const { room } = membership({
      hooks: {
        removed: (shard, _drained, drain) => {
          calls.push([shard.id, drain]);
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
    });
    room.start([spec('a'), spec('b')]);
    let done = false;
    void room.remove('a', true).then(() => {
      done = true;
    });
    await flush();
    expect({ calls, done }).toEqual({ calls: [['a', true]], done: false });
    release();
    await flush();
    expect(done).toBe(true);
  });
});

describe('Membership: set', () => {
  it('diffs by id: kept shards keep their object and take the new weight, one install for all', async () => {
    const added: string[][] = [];
    const removed: string[] = [];
    const { room, log } = membership({
      hooks: {
        added: (s) => added.push(s.map((x) => x.id)),
        removed: (shard) => {
          removed.push(shard.id);
        },
      },
    });
    room.start([spec('a'), spec('b'), spec('c')]);
    const [a, b, c] = room.shards;
    log.length = 0;
    await room.set([spec('c', { weight: 3, labels: { zone: 'x' } }), spec('d'), spec('a')]);
    expect(order(room)).toEqual(['c@0', 'd@1', 'a@2']);
    expect(room.shards[0]).toBe(c);
    expect(room.shards[2]).toBe(a);
    expect(c!.weight).toBe(3);
    expect(c!.labels).toEqual({ zone: 'x' });
    expect(b!.removed).toBe(true);
    expect(room.version).toBe(2);
    expect(log).toEqual(['rebuild c,d,a', 'installed c,d,a v2', 'changed +d -b true']);
    expect(added).toEqual([['a', 'b', 'c'], ['d']]);
    expect(removed).toEqual(['b']);
  });

  it('replaces a kept id whose target changed (by plain data, or by sameTarget)', async () => {
    const { room } = membership();
    room.start([spec('a'), spec('b')]);
    const [a, b] = room.shards;
    await room.set([spec('a'), { id: 'b', target: 'elsewhere' }]);
    expect(room.shards[0]).toBe(a);
    expect(room.shards[1]).not.toBe(b);
    expect(b!.removed).toBe(true);

    const custom = membership({ hooks: { sameTarget: () => true } });
    custom.room.start([spec('a')]);
    const kept = custom.room.shards[0];
    await custom.room.set([{ id: 'a', target: 'moved' }]);
    expect(custom.room.shards[0]).toBe(kept);
  });

  it('a membership the picker refuses changes nothing: weights, labels and version restored', () => {
    let refuse = false;
    const { room, log } = membership({
      rebuild: () => {
        if (refuse) throw new ConfigError('picker', 'refuses', 'x');
      },
    });
    room.start([spec('a', { weight: 1 }), spec('b')]);
    const a = room.shards[0]!;
    log.length = 0;
    refuse = true;
    expect(() => room.set([spec('a', { weight: 5, labels: { zone: 'z' } })])).toThrow(ConfigError);
    expect({ weight: a.weight, labels: a.labels, version: room.version }).toEqual({
      weight: 1,
      labels: {},
      version: 1,
    });
    expect(order(room)).toEqual(['a@0', 'b@1']);
    expect(log).toEqual([]);
  });
});

describe('Membership: member and close', () => {
  it('member finds a shard by id or by its state, and refuses anything else', () => {
    const { room } = membership();
    room.start([spec('a'), spec('b')]);
    const b = room.shards[1]!;
    expect(room.member('b')).toBe(b);
    expect(room.member(b)).toBe(b);
    const stranger = new Shard<string>(spec('b'), 1, 1, new ManualClock(), {});
    expect(() => room.member(stranger)).toThrow(/shard.*must be a member shard or its id/);
    expect(() => room.member('zz')).toThrow(ConfigError);
  });

  it('close hands the hooks the drain flag, once', async () => {
    const closed: boolean[] = [];
    const { room } = membership({ hooks: { closed: (drain) => void closed.push(drain) } });
    room.start([spec('a')]);
    await room.close(false);
    expect(closed).toEqual([false]);
  });
});
