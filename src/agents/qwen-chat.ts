// Qwen Code's saved conversation (~/.qwen/projects/<cwd with / as ->/chats/<session id>.jsonl, the hooks'
// transcript_path): one record a line (user, assistant with `message.parts[].functionCall` {id, name, args},
// tool_result, system), chained by uuid/parentUuid, each naming its sessionId. A fork keeps the lines before
// the assistant line holding step N's call, under a new session id beside the original (never modified), so
// `qwen --resume <id>` continues from before that call.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { errors } from '../base/errors.js';
import { shellQuote } from '../base/shell.js';
import type { ChatFork, ForkPoint } from './adapter.js';
import { type Obj, isObj } from './plan.js';

/** The ids of the calls an assistant record holds (its functionCall parts). */
function callIds(record: Obj): string[] {
  const parts = isObj(record.message) && Array.isArray(record.message.parts) ? record.message.parts : [];
  return parts.flatMap((p) => (isObj(p) && isObj(p.functionCall) && typeof p.functionCall.id === 'string' ? [p.functionCall.id] : []));
}

/** A new conversation cut before the assistant record holding step N's call (`toolUseId`: the model's call id). */
export function forkQwenChat(step: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork {
  const original = step.transcript?.path;
  if (!original) throw errors.invalidArgument(`step ${step.step} has no transcript position.`);
  if (!step.toolUseId)
    throw errors.invalidArgument(`step ${step.step} has no call id to find in the Qwen Code conversation ${original}.`, {
      data: { path: original },
    });
  let text: string;
  try {
    text = fs.readFileSync(original, 'utf8');
  } catch (e) {
    throw errors.unreadableFile(`cannot read the Qwen Code conversation ${original}: ${(e as Error).message}`, {
      data: { path: original },
    });
  }
  const lines = text.split('\n').filter((l) => l.trim());
  const records = lines.map((l) => {
    try {
      const v: unknown = JSON.parse(l);
      return isObj(v) ? v : null;
    } catch {
      return null; // a line being written, or not JSON: not a record
    }
  });
  const at = records.findIndex((r) => r !== null && r.type === 'assistant' && callIds(r).includes(step.toolUseId as string));
  if (at < 0)
    throw errors.invalidArgument(`the tool call of step ${step.step} is not in the Qwen Code conversation ${original}.`, {
      data: { path: original, toolUseId: step.toolUseId },
    });
  const id = opts.newId ?? randomUUID();
  const file = path.join(path.dirname(original), `${id}.jsonl`);
  const kept = records.slice(0, at).flatMap((r) => (r ? [JSON.stringify({ ...r, sessionId: id })] : []));
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, kept.length ? `${kept.join('\n')}\n` : '', { mode: 0o600, flag: 'wx' });
  if (fs.existsSync(file)) {
    fs.rmSync(tmp, { force: true });
    throw errors.invalidArgument(`${file} exists already.`, { data: { path: file } });
  }
  fs.renameSync(tmp, file);
  // Qwen looks a session up by the directory it runs in: the one its records name.
  const cwd = records.find((r) => r && typeof r.cwd === 'string')?.cwd as string | undefined;
  const dir = cwd ?? opts.cwd;
  return {
    kind: 'transcript',
    agent: 'qwen',
    file,
    original,
    sessionId: id,
    cwd: dir,
    resumeCommand: `qwen --resume ${id}`,
    shellCommand: `cd ${shellQuote(dir)} && qwen --resume ${id}`,
    lines: kept.length,
    sharedWith: callIds(records[at] as Obj).length - 1,
    subagentCall: null,
    subagentStep: null,
  };
}
