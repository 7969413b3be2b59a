// Opening the page in the user's browser: the platform's opener, detached, its
// output ignored. Failing to open is no error: the command prints the URL.
import { spawn } from 'node:child_process';

/** Starts the platform's URL opener; false when there is none to start. */
export function openInBrowser(url: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(cmd as string, args as string[], { detached: true, stdio: 'ignore', env });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
