// Where the package's own files (bin/, hooks/) are. This module runs from
// src/base/ (tests), dist/base/ (the library) or inside dist/cli.bundle.cjs (the
// bundled CLI), so a fixed `..` from its location is wrong somewhere: the root
// is the first directory above it that holds package.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function packageRoot(): string {
  if (root !== undefined) return root;
  const start = path.dirname(fileURLToPath(import.meta.url));
  let dir = start;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) return (root = path.resolve(start, '..'));
    dir = up;
  }
  return (root = dir);
}
