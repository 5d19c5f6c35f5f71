/**
 * What TypeScript tells a caller who gives an entry point an option it does not take: the error
 * must name that entry point's own options type, at the option — not "'path' does not exist in
 * type IngestOptions" because the compiler tried the wrong member of a union or overload.
 * Compiled with the repository's own compiler options, against the sources.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FILE = `${ROOT}test/types/__unknown-options.ts`;

/** Each line calls one entry point with an unknown option, `compress`. */
const CALLS = {
  'http.ingest': `await http.ingest(rows, { path: '/ingest', compress: 'gzip' });`,
  'http.createWriteStream': `http.createWriteStream({ path: '/ingest', compress: 'gzip' });`,
  's3.ingest': `await s3.ingest(rows, { objectKey: () => 'k', compress: 'gzip' });`,
  's3.createWriteStream': `s3.createWriteStream({ objectKey: () => 'k', compress: 'gzip' });`,
  'http.ingest with a send': `await http.ingest(rows, { send: async () => {}, compress: 'gzip' });`,
  'balancer.ingest': `await balancer.ingest(rows, { send: async () => {}, compress: 'gzip' });`,
  'balancer.ingest with batch': `await balancer.ingest(rows, { batch: {}, send: async () => {}, compress: 'gzip' });`,
  'balancer.createWriteStream': `balancer.createWriteStream({ send: async () => {}, compress: 'gzip' });`,
} as const;

const HEADER = `import type { Balancer } from '../../src/index.js';
import type { HttpBalancer } from '../../src/http/index.js';
import type { S3Balancer } from '../../src/s3/index.js';
declare const rows: { id: string }[];
declare const balancer: Balancer<string>;
declare const http: HttpBalancer;
declare const s3: S3Balancer;
`;

/** The diagnostics of each call, keyed by its name: the whole message chain, flattened. */
function diagnostics(): Map<string, { message: string; at: string }[]> {
  const names = Object.keys(CALLS);
  const source = `${HEADER}${Object.values(CALLS).join('\n')}\nexport {};\n`;
  const firstLine = HEADER.split('\n').length - 1;
  const config = ts.readConfigFile(`${ROOT}tsconfig.json`, (path) => readFileSync(path, 'utf8'));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (path) => (path === FILE ? source : readFile(path));
  host.fileExists = (path) => path === FILE || ts.sys.fileExists(path);
  host.getSourceFile = (path, language) =>
    path === FILE ? ts.createSourceFile(path, source, language) : getSourceFile(path, language);
  const program = ts.createProgram([FILE], { ...options, noEmit: true }, host);
  const file = program.getSourceFile(FILE)!;
  const byCall = new Map<string, { message: string; at: string }[]>(names.map((n) => [n, []]));
  for (const d of program.getSemanticDiagnostics(file)) {
    const { line, character } = file.getLineAndCharacterOfPosition(d.start!);
    const name = names[line - firstLine]!;
    const text = file.text.split('\n')[line]!;
    byCall.get(name)?.push({
      message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      at: text.slice(character, character + (d.length ?? 0)),
    });
  }
  return byCall;
}

/** The core's option types, in either form. */
const CORE = /'compress' does not exist in type '(Batch|Single)?(Ingest|Record)Options</;

describe('an unknown option is reported against the entry point’s own options type', () => {
  let found = new Map<string, { message: string; at: string }[]>();
  beforeAll(() => {
    found = diagnostics();
  }, 60_000);

  it.each([
    ['http.ingest', 'HttpIngestOptions<{ id: string; }>'],
    ['http.createWriteStream', 'HttpRecordOptions<unknown>'],
    ['s3.ingest', 'S3IngestOptions<{ id: string; }>'],
    ['s3.createWriteStream', 'S3RecordOptions<unknown>'],
  ])('%s: one error, at `compress`, naming %s', (call, type) => {
    const errors = found.get(call)!;
    expect(errors).toEqual([
      {
        message: `Object literal may only specify known properties, and 'compress' does not exist in type '${type}'.`,
        at: 'compress',
      },
    ]);
  });

  it.each([
    ['http.ingest with a send', /'compress' does not exist in type 'OwnSend<SingleIngestOptions</],
    ['balancer.ingest', CORE],
    ['balancer.ingest with batch', CORE],
    ['balancer.createWriteStream', CORE],
  ])('%s: errors at `compress`, about `compress` only, in the core’s own types', (call, names) => {
    const errors = found.get(call)!;
    expect(errors.length).toBeGreaterThan(0);
    for (const { message, at } of errors) {
      expect(at).toBe('compress');
      expect(message).toMatch(names);
      // Every line of the message speaks of `compress`, none of another option.
      const complaints = [...message.matchAll(/'(\w+)' does not exist/g)].map((m) => m[1]);
      expect(new Set(complaints)).toEqual(new Set(['compress']));
    }
  });
});
