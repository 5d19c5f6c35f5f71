/**
 * Runs the `shardwise` command the way `npm run demo` / `npm run simulate` do (tsx on the
 * sources), or any script under tsx, in its own process group with a bounded timeout: on timeout
 * the whole group (the command and the demo's shard process) is killed and `timedOut` is set.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
  timedOut: boolean;
}

export function runScript(args: string[], timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX, ...args], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let out = '';
    let err = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err, timedOut });
    });
  });
}

export function cli(args: string[], timeoutMs = 60_000): Promise<Ran> {
  return runScript(['src/cli/main.ts', ...args], timeoutMs);
}

/** Lines of a stack trace (`    at f (file:1:2)`). */
export function stackFrames(text: string): string[] {
  return text.split('\n').filter((line) => /^\s+at\s.*:\d+:\d+\)?$/.test(line));
}

/**
 * `text` with each wrapped entry on one line again: the command wraps what it prints to 80
 * columns, and a line that starts with spaces goes on from the line before (a table's long name
 * stands on a line of its own above its figures, which this joins too).
 */
export function unwrap(text: string): string {
  return text.replace(/\n +(?=\S)/g, ' ');
}

/**
 * Starts the command in a child process of its own — node with tsx as its loader, so a signal sent
 * to the child reaches the command itself (the `tsx` launcher would relay it) — and resolves with
 * what it printed once it exits. Killed (SIGKILL) after `timeoutMs` at the latest.
 */
export function startCli(
  args: string[],
  timeoutMs = 60_000,
): { child: ChildProcess; done: Promise<Ran> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let out = '';
  let err = '';
  let timedOut = false;
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const done = new Promise<Ran>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err, timedOut });
    });
  });
  return { child, done };
}
