// Opening the page in the user's browser: the platform's opener, detached, its
// output ignored. Failing to open is no error: the command prints the URL.
//
// The opener is never given the URL itself: it holds the token, and a process's
// argv (the opener's, then the browser's) is readable by every local user (ps,
// /proc/<pid>/cmdline). It is given a file instead, readable by the user only,
// that sends the browser on to the URL (as Jupyter does); the file goes when the
// page's server stops.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';

export interface Opened {
  /** False when no opener could be started (the user opens the printed URL). */
  opened: boolean;
  /** Removes the file that leads to the page. */
  close(): void;
}

const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A 0600 file in a 0700 directory of its own that takes the browser to `url`. */
export function launchFile(url: string, env: NodeJS.ProcessEnv): { file: string; close(): void } {
  const dir = fs.mkdtempSync(path.join(env.TMPDIR || os.tmpdir(), 'agentsnap-ui-'));
  const file = path.join(dir, 'open.html');
  const u = attr(url);
  fs.writeFileSync(
    file,
    `<!doctype html>\n<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${u}"><title>agentsnap ui</title></head>\n<body><a href="${u}">Open agentsnap ui</a></body></html>\n`,
    { mode: 0o600, flag: 'wx' },
  );
  return { file, close: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Starts the platform's URL opener on a file leading to `url`. */
export function openInBrowser(url: string, env: NodeJS.ProcessEnv = process.env): Promise<Opened> {
  let launch: { file: string; close(): void };
  try {
    launch = launchFile(url, env);
  } catch {
    // No private file to be had: better no browser than the token in argv.
    return Promise.resolve({ opened: false, close: () => {} });
  }
  const { file, close } = launch;
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [file]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', file]]
        : ['xdg-open', [file]];
  return new Promise((resolve) => {
    try {
      const child = spawn(cmd as string, args as string[], { detached: true, stdio: 'ignore', env });
      child.once('error', () => {
        close();
        resolve({ opened: false, close });
      });
      child.once('spawn', () => {
        child.unref();
        resolve({ opened: true, close });
      });
    } catch {
      close(); // no browser could be started: the caller prints the address instead
      resolve({ opened: false, close });
    }
  });
}
