// Words for the POSIX shell (hook commands agents run, resume commands shown
// to the user) and programs as it finds them on PATH.
import fs from 'node:fs';
import path from 'node:path';

/** Quotes one word for the POSIX shell that agents run hook commands with. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The executable file `name` resolves to on `env.PATH`, as `command -v` finds it; null when none. */
export function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      /* not here */
    }
  }
  return null;
}
