// `wrap --auto`: checkpoints for agents that have no hooks (aider…). A step
// is taken whenever the worktree changed and then stayed quiet for
// agentsnap.autoQuiet. A recursive fs.watch says when something changed;
// it can miss events (inotify limits, directories created in a burst), so a
// cheap poll every agentsnap.autoPoll also tries a checkpoint, which writes
// nothing when the tree equals the session's latest snapshot.
import fs from 'node:fs';
import path from 'node:path';
import type { Context } from '../session/context.js';
import { recordCheckpointIfChanged } from '../session/session.js';
import { isAgentsnapError } from '../base/errors.js';

import { AUTO_TOOL } from '../session/model.js';

export { AUTO_TOOL };

export interface AutoCheckpoints {
  /** Stops watching, waits for a checkpoint in progress, then takes the last one (the session's final snapshot comes after). */
  stop(): Promise<void>;
}

export interface AutoOptions {
  /** Told once per distinct problem (one line); checkpoints go on. */
  onWarning?: (line: string) => void;
  /**
   * Whose change the checkpoints record (default 'agent': an agent with no hooks has no tool calls, its bursts
   * of changes are its steps). 'user' for an agent whose hooks record its calls: a change between them is not one.
   */
  madeBy?: 'agent' | 'user';
}

function insideGitDir(rel: string): boolean {
  const first = rel.split(path.sep)[0];
  return first === '.git';
}

export function startAutoCheckpoints(ctx: Context, session: string, opts: AutoOptions = {}): AutoCheckpoints {
  const { repo, settings } = ctx;
  const quietMs = Math.max(0, settings.autoQuietMs);
  const pollMs = settings.autoPollMs;
  let stopped = false;
  let quietTimer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  const warned = new Set<string>();
  const warn = (line: string) => {
    if (warned.has(line)) return;
    warned.add(line);
    opts.onWarning?.(line);
  };

  const madeBy = opts.madeBy ?? 'agent';
  const checkpointNow = async (): Promise<void> => {
    try {
      await recordCheckpointIfChanged(ctx, session, { tool: AUTO_TOOL, message: 'the worktree changed', madeBy });
    } catch (e) {
      // Busy: another snapshot holds the session; the next change or poll tries again.
      if (!(isAgentsnapError(e) && e.code === 'Busy'))
        warn(`agentsnap: warning: automatic checkpoint failed: ${(e as Error).message.split('\n')[0]}`);
    }
  };

  const attempt = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = checkpointNow().finally(() => {
      running = null;
      if (again && !stopped) {
        again = false;
        attempt();
      }
    });
  };

  const changed = (): void => {
    if (stopped) return;
    if (quietTimer) clearTimeout(quietTimer);
    quietTimer = setTimeout(() => {
      quietTimer = null;
      attempt();
    }, quietMs);
    quietTimer.unref();
  };

  let watcher: fs.FSWatcher | null = null;
  try {
    watcher = fs.watch(repo.worktree, { recursive: true, persistent: false }, (_event, filename) => {
      if (filename && insideGitDir(filename.toString())) return;
      changed();
    });
    watcher.on('error', (e) => {
      warn(
        `agentsnap: warning: watching the worktree stopped (${e.message}); checking for changes every ${Math.round((pollMs || 10_000) / 1000)} s instead`,
      );
      watcher?.close();
      watcher = null;
    });
  } catch (e) {
    warn(
      `agentsnap: warning: cannot watch the worktree (${(e as Error).message}); checking for changes every ${Math.round((pollMs || 10_000) / 1000)} s instead`,
    );
  }
  // Without a watcher the poll is all there is: never leave it off then.
  const interval = pollMs > 0 ? pollMs : watcher ? 0 : 10_000;
  const poll =
    interval > 0
      ? setInterval(() => {
          if (!quietTimer) attempt();
        }, interval)
      : null;
  poll?.unref();

  return {
    async stop(): Promise<void> {
      stopped = true;
      watcher?.close();
      if (quietTimer) clearTimeout(quietTimer);
      if (poll) clearInterval(poll);
      while (running) await running;
      // The agent has exited: its last burst (not yet quiet long enough) is its last step, not a change
      // the session's final snapshot would record as made outside its calls.
      await checkpointNow();
    },
  };
}
