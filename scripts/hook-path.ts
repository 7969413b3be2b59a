// Prints the path of a hook call at run time by layer (issue 30, item 3), and every call from a lower layer into a
// higher one that it makes, which the import graph cannot show (test/support/hook-path.ts, runtime-calls.ts).
//   npm run build && node --import tsx scripts/hook-path.ts [--json]
// --json prints {calls, upward: [{caller, callee, times, chain}]} for test/server/hook-path.test.ts, which runs it in a
// process of its own (an inspector session with breakpoints would see every other test file's calls too).
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../test/support/helpers.js';
import { layerOf, layersFromDoc } from '../test/support/import-graph.js';
import { hookCallPath } from '../test/support/hook-path.js';
import { describeFrame, upwardCalls } from '../test/support/runtime-calls.js';

const layers = layersFromDoc(fs.readFileSync(path.join(ROOT, 'DEVELOPING.md'), 'utf8'));
const { ran, calls } = await hookCallPath();
const up = upwardCalls(calls, layers);
if (process.argv.includes('--json')) {
  process.stdout.write(`${JSON.stringify({ calls: calls.length, upward: up })}\n`);
  process.exit(0);
}
console.log("A Write's pre + post hook through the warm server (engine up): the functions of src/ that ran, by layer (top first)");
for (const layer of [...layers].reverse()) {
  const files = [...ran.keys()].filter((f) => layerOf(f) === layer).sort();
  if (files.length === 0) continue;
  console.log(`  ${layer === '.' ? 'src/*.ts' : `${layer}/`}`);
  for (const f of files) console.log(`    ${f}: ${[...(ran.get(f) as Set<string>)].sort().join(', ')}`);
}
console.log(`\n${up.length} of ${calls.length} distinct caller → callee pairs go from a lower layer into a higher one:`);
for (const c of up) {
  console.log(`\n  ${describeFrame(c.caller)} → ${describeFrame(c.callee)}   (×${c.times} in one pre + post)`);
  const chain: string[] = [];
  for (const f of c.chain) {
    const text = `${layerOf(f.file as string).padEnd(9)} ${describeFrame(f)}`;
    if (chain.at(-1) !== text) chain.push(text);
  }
  console.log(`    at ${chain.join('\n    ← ')}`);
}
