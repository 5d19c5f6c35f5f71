/**
 * A real DNS server for the DNS tests: dnsmasq in the foreground on a free loopback port, with
 * its own hosts file (TOOLCHAIN.md trap 10). Hosts changes are a rewrite + SIGHUP; SRV and TXT
 * records are in a config file read at start (thousands of them fit, where flags would not), so
 * changing them restarts it on the same port. Names are under `DOMAIN`, unless they end with a
 * dot: `s.` is the one-label name `s` (an SRV answer of 3 000 records to one short target fits a
 * TCP message of 64 KiB; RFC 2782 forbids compressing targets).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { DnsChange, DnsWatch } from '../../src/dns/index.js';

/** The dnsmasq binary, or undefined when it is not installed. */
export function findDnsmasq(): string | undefined {
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/sbin',
    '/usr/local/sbin',
    '/sbin',
  ];
  for (const dir of dirs) {
    if (dir === '') continue;
    const file = join(dir, 'dnsmasq');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return undefined;
}

export interface SrvRecord {
  name: string;
  /** Under `DOMAIN`, or absolute when it ends with a dot. */
  target: string;
  port: number;
  priority?: number;
  weight?: number;
}

export interface Zone {
  /** name → addresses (each name is under `DOMAIN`, or absolute when it ends with a dot). */
  hosts?: Record<string, string[]>;
  srv?: SrvRecord[];
  /** Names that exist with a TXT record only (A/AAAA queries answer NODATA). */
  txt?: string[];
}

export interface DnsServerOptions {
  /** TTL of the answers, s (dnsmasq's default for local data is 0). */
  localTtl?: number;
}

export const DOMAIN = 'shardwise.test';

export class DnsServer {
  readonly dir: string;
  port = 0;
  #child: ChildProcess | undefined;
  #zone: Zone;
  #log = '';

  private constructor(
    zone: Zone,
    private readonly options: DnsServerOptions,
  ) {
    this.#zone = zone;
    this.dir = mkdtempSync(join(tmpdir(), 'shardwise-dns-'));
    // dnsmasq started as root reads the hosts file again (SIGHUP) as "nobody".
    chmodSync(this.dir, 0o755);
  }

  static async start(zone: Zone, options: DnsServerOptions = {}): Promise<DnsServer> {
    const server = new DnsServer(zone, options);
    for (let tries = 0; ; tries++) {
      server.port = await freeUdpPort();
      try {
        await server.#spawn();
        return server;
      } catch (error) {
        if (tries >= 4) throw error;
      }
    }
  }

  /** `127.0.0.1:port`, for `servers`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Rewrites the hosts file and sends SIGHUP; resolves once dnsmasq answers with the new set. */
  async setHosts(hosts: Record<string, string[]>): Promise<void> {
    this.#zone = { ...this.#zone, hosts };
    this.#writeHosts();
    this.#child!.kill('SIGHUP');
    await this.#until(async () => {
      for (const [name, addresses] of Object.entries(hosts)) {
        const got = await this.lookup(name);
        if (got.join(',') !== [...addresses].sort().join(',')) return false;
      }
      return true;
    });
  }

  /** Replaces SRV/TXT records (command-line flags): restarts dnsmasq on the same port. */
  async setZone(zone: Zone): Promise<void> {
    this.#zone = zone;
    await this.stop();
    await this.#spawn();
  }

  /** Sorted A addresses of `name` as dnsmasq answers now ([] for no answer). */
  async lookup(name: string): Promise<string[]> {
    const resolver = new Resolver({ timeout: 500, tries: 1 });
    resolver.setServers([this.address]);
    try {
      return (await resolver.resolve4(fqdn(name))).sort();
    } catch {
      return [];
    }
  }

  /** Stops dnsmasq (by its PID); `restart()` brings it back on the same port. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  }

  async restart(): Promise<void> {
    await this.#spawn();
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  #writeHosts(): void {
    const lines: string[] = [];
    for (const [name, addresses] of Object.entries(this.#zone.hosts ?? {})) {
      for (const address of addresses) lines.push(`${address} ${fqdn(name)}`);
    }
    const file = join(this.dir, 'hosts');
    writeFileSync(file, `${lines.join('\n')}\n`);
    chmodSync(file, 0o644);
  }

  async #spawn(): Promise<void> {
    this.#writeHosts();
    const args = [
      '--no-daemon',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${join(this.dir, 'hosts')}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      `--port=${this.port}`,
      `--local=/${DOMAIN}/`,
      '--no-negcache',
      '--pid-file=',
      `--local-ttl=${this.options.localTtl ?? 0}`,
      `--conf-file=${join(this.dir, 'records.conf')}`,
    ];
    const records: string[] = [];
    for (const r of this.#zone.srv ?? []) {
      records.push(
        `srv-host=${r.name}.${DOMAIN},${fqdn(r.target)},${r.port},${r.priority ?? 0},${r.weight ?? 0}`,
      );
    }
    for (const name of this.#zone.txt ?? []) records.push(`txt-record=${name}.${DOMAIN},"test"`);
    const conf = join(this.dir, 'records.conf');
    writeFileSync(conf, `${records.join('\n')}\n`);
    chmodSync(conf, 0o644);
    this.#log = '';
    const child = spawn(findDnsmasq()!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    child.stdout?.on('data', (d: Buffer) => {
      this.#log += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      this.#log += d.toString();
    });
    const exited = new Promise<never>((_resolve, reject) =>
      child.once('exit', (code) => reject(new Error(`dnsmasq exited (${code}): ${this.#log}`))),
    );
    exited.catch(() => {});
    // Up when it answers anything at all (a refused connection means not yet).
    await Promise.race([
      exited,
      this.#until(async () => {
        const resolver = new Resolver({ timeout: 300, tries: 1 });
        resolver.setServers([this.address]);
        try {
          await resolver.resolveTxt(`probe.${DOMAIN}`);
          return true;
        } catch (error) {
          const code = (error as { code?: string }).code;
          return code !== 'ECONNREFUSED' && code !== 'ETIMEOUT';
        }
      }),
    ]);
  }

  /** Polls `check` until it holds; bounded (5 s), so a broken server fails the test. */
  async #until(check: () => Promise<boolean>): Promise<void> {
    const deadline = performance.now() + 5_000;
    while (!(await check())) {
      if (performance.now() > deadline) throw new Error(`dnsmasq did not get ready: ${this.#log}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** `name` under `DOMAIN`, or `name` without its final dot when it ends with one. */
function fqdn(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : `${name}.${DOMAIN}`;
}

async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** The next `event` of `watch`, bounded in time so a watch that never reports fails the test. */
export function next<E extends 'change' | 'error'>(
  watch: DnsWatch,
  event: E,
  timeoutMs = 10_000,
): Promise<E extends 'change' ? DnsChange : unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      watch.off(event, listener);
      reject(new Error(`no '${event}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (value: unknown) => {
      clearTimeout(timer);
      resolve(value as never);
    };
    watch.once(event, listener);
  });
}
