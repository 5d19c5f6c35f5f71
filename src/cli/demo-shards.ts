/**
 * The demo's shards as the parent sees them: a child process running the HTTP ingest servers
 * (`shard-server.ts`), steered over IPC: reset, make one slow or failing, collect what each got.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ShardCommand, ShardReply } from './shard-server.js';

/** Talks to the shard child process. */
export class DemoShards {
  private readonly child: ChildProcess;
  private readonly waiting: ((reply: ShardReply) => void)[] = [];

  private constructor(child: ChildProcess) {
    this.child = child;
    child.on('message', (reply: ShardReply) => this.waiting.shift()?.(reply));
  }

  static async start(count: number): Promise<{ shards: DemoShards; ports: number[] }> {
    const main = fileURLToPath(
      new URL(import.meta.url.endsWith('.ts') ? './main.ts' : './main.js', import.meta.url),
    );
    // Under a TypeScript runner (tsx, vitest) the child needs the same loader.
    const execArgv =
      main.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx'))
        ? ['--import', 'tsx']
        : process.execArgv;
    const child = fork(main, ['__shards', String(count)], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const shards = new DemoShards(child);
    const first = await new Promise<ShardReply>((resolve, reject) => {
      shards.waiting.push(resolve);
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`the shard process exited early (code ${code})`)),
      );
    });
    if (!('ports' in first)) throw new Error('the shard process did not report its ports');
    return { shards, ports: first.ports };
  }

  ask(command: ShardCommand): Promise<ShardReply> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.send(command);
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
      this.child.send({ cmd: 'stop' } satisfies ShardCommand);
    });
  }
}
