/**
 * A tiny programmable DNS server on 127.0.0.1 (UDP), for cases dnsmasq cannot express:
 * per-type TTLs, SERVFAIL on one record type, dropped queries (timeouts).
 */
import { createSocket, type Socket } from 'node:dgram';

export type Answer =
  | { type: 'A'; address: string; ttl: number }
  | { type: 'AAAA'; address: string; ttl: number }
  | { type: 'SRV'; priority: number; weight: number; port: number; target: string; ttl: number };

/** What to do with one query: answers, an rcode, or drop it. */
export type Reply = { answers: Answer[] } | { rcode: number } | 'drop';

export type Handler = (name: string, type: 'A' | 'AAAA' | 'SRV' | string) => Reply;

const TYPES: Record<number, string> = { 1: 'A', 28: 'AAAA', 33: 'SRV' };
const CODES: Record<string, number> = { A: 1, AAAA: 28, SRV: 33 };

export class FakeDns {
  readonly queries: { name: string; type: string }[] = [];
  private constructor(
    private readonly socket: Socket,
    public handler: Handler,
  ) {}

  static async start(handler: Handler): Promise<FakeDns> {
    const socket = createSocket('udp4');
    const dns = new FakeDns(socket, handler);
    socket.on('message', (msg, rinfo) => {
      const reply = dns.answer(msg);
      if (reply !== undefined) socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return dns;
  }

  get address(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(msg: Buffer): Buffer | undefined {
    const id = msg.readUInt16BE(0);
    let off = 12;
    const labels: string[] = [];
    while (msg[off]! !== 0) {
      const len = msg[off]!;
      labels.push(msg.subarray(off + 1, off + 1 + len).toString('ascii'));
      off += len + 1;
    }
    off++;
    const qtype = msg.readUInt16BE(off);
    const question = msg.subarray(12, off + 4);
    const name = labels.join('.').toLowerCase();
    const type = TYPES[qtype] ?? String(qtype);
    this.queries.push({ name, type });
    const reply = this.handler(name, type);
    if (reply === 'drop') return undefined;
    const rcode = 'rcode' in reply ? reply.rcode : 0;
    const answers = 'answers' in reply ? reply.answers.filter((a) => CODES[a.type] === qtype) : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(id, 0);
    header.writeUInt16BE(0x8400 | 0x0100 | 0x0080 | rcode, 2); // QR, AA, RD, RA
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const parts = [header, question];
    for (const a of answers) parts.push(record(a));
    return Buffer.concat(parts);
  }
}

function encodeName(name: string): Buffer {
  const parts: Buffer[] = [];
  for (const label of name.split('.').filter((l) => l !== '')) {
    parts.push(Buffer.from([label.length]), Buffer.from(label, 'ascii'));
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

function record(a: Answer): Buffer {
  let rdata: Buffer;
  if (a.type === 'A') rdata = Buffer.from(a.address.split('.').map(Number));
  else if (a.type === 'AAAA') rdata = ipv6(a.address);
  else {
    const head = Buffer.alloc(6);
    head.writeUInt16BE(a.priority, 0);
    head.writeUInt16BE(a.weight, 2);
    head.writeUInt16BE(a.port, 4);
    rdata = Buffer.concat([head, encodeName(a.target)]);
  }
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(CODES[a.type]!, 0);
  fixed.writeUInt16BE(1, 2);
  fixed.writeUInt32BE(a.ttl, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  // Name: a pointer to the question's name (offset 12).
  return Buffer.concat([Buffer.from([0xc0, 12]), fixed, rdata]);
}

function ipv6(address: string): Buffer {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => {
    out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return out;
}
