// Shadow repository tests' ground (test/git/shadow*.test.ts): a plain directory in no git repository.
import fs from 'node:fs';
import path from 'node:path';
import { tempRepo, type TempRepo } from './helpers.js';

/** A plain directory (no git anywhere above it: the ceiling is the temp dir) and where its shadows would go. */
export function plainDir(files: Record<string, string> = { 'a.txt': 'one\n' }): {
  t: TempRepo;
  env: Record<string, string>;
  shadows: string;
} {
  const t = tempRepo({ noInit: true });
  for (const [rel, content] of Object.entries(files)) t.write(rel, content);
  return {
    t,
    env: { GIT_CEILING_DIRECTORIES: t.base },
    shadows: path.join(t.home, '.local', 'state', 'agentsnap', 'shadows'),
  };
}

/** The entries of the shadows directory, sorted (none when it does not exist). */
export const listShadows = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []);
