// Writes every ```ts block of README.md and docs/*.md to .snippets/ so `tsc` type-checks them:
// an example in the docs cannot rot.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = '.snippets';
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const sources = ['README.md'];
try {
  for (const f of readdirSync('docs')) if (f.endsWith('.md')) sources.push(join('docs', f));
} catch {}
let count = 0;
for (const file of sources) {
  const text = readFileSync(file, 'utf8');
  const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)];
  blocks.forEach((match, i) => {
    const name = `${file.replace(/[^a-z0-9]+/gi, '-')}-${i + 1}.ts`;
    // `export {}` makes each snippet a module, so top-level await and names stay local.
    writeFileSync(join(out, name), `// from ${file}, block ${i + 1}\n${match[1]}\nexport {};\n`);
    count++;
  });
}
console.log(`extracted ${count} snippet(s) into ${out}/`);
