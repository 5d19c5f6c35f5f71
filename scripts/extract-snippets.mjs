// Writes every ```ts block of README.md and docs/*.md to .snippets/ so `tsc` type-checks them:
// an example in the docs cannot rot. `--root DIR` reads README.md and docs/ from DIR (an installed
// package, for the package test) and `--out DIR` writes there instead of .snippets/.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    root: { type: 'string', default: '.' },
    out: { type: 'string', default: '.snippets' },
  },
});
const root = values.root;
const out = values.out;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const sources = ['README.md'];
try {
  for (const f of readdirSync(join(root, 'docs')))
    if (f.endsWith('.md')) sources.push(join('docs', f));
} catch {}
let count = 0;
for (const file of sources) {
  const text = readFileSync(join(root, file), 'utf8');
  const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)];
  blocks.forEach((match, i) => {
    const name = `${file.replace(/[^a-z0-9]+/gi, '-')}-${i + 1}.ts`;
    // `export {}` makes each snippet a module, so top-level await and names stay local.
    writeFileSync(join(out, name), `// from ${file}, block ${i + 1}\n${match[1]}\nexport {};\n`);
    count++;
  });
}
console.log(`extracted ${count} snippet(s) into ${out}/`);
