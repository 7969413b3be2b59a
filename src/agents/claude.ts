// Claude Code: everything agentsnap knows about it (its transcript — reading
// and forking it — is in claude-transcript.ts beside this file).
// - wrap: hooks added through `--settings` (merged by Claude Code with the
//   user's settings; no file is edited).
// - init: .claude/settings.local.json (personal by design), plus the
//   in-agent command /agentsnap-undo (.claude/commands/agentsnap-undo.md).
// - MCP (`agentsnap mcp`): `init --mcp` declares it in the project's .mcp.json,
//   `wrap --mcp` passes it for the run with `--mcp-config`.
// - Read-only tools are not hooked: the session imports them from the
//   transcript (session/transcript-import), so their matcher leaves them out.
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../base/errors.js';
import type { AgentAdapter, McpServerCommand, PlanItem } from './adapter.js';
import { jsonMcpLayout, MCP_SERVER_NAME } from './settings-file.js';
import {
  compactClaudeTranscript,
  forkClaudeTranscript,
  locateToolCall,
  readConversation,
  readTranscriptTail,
  toolsOffered,
  unjournaledReadCalls,
} from './claude-transcript.js';
import { field, paths, shell, text, type CallDescription } from './describe.js';
import { obj, planFromList, str } from './plan.js';

/** Claude Code's built-in tools by their input (its tool schemas: Bash `command`, Write/Edit/MultiEdit/Read `file_path`…). */
function describeClaudeCall(tool: string | null, input: unknown): CallDescription | null {
  switch (tool) {
    case 'Bash':
      return shell(field(input, 'command'));
    case 'Write':
    case 'Edit':
    case 'MultiEdit':
    case 'Read':
      return paths(field(input, 'file_path'));
    case 'NotebookEdit':
    case 'NotebookRead':
      return paths(field(input, 'notebook_path'));
    case 'LS':
      return paths(field(input, 'path'));
    case 'Glob':
    case 'Grep': {
      const pattern = field(input, 'pattern');
      const where = field(input, 'path');
      return text(pattern === null ? null : where === null ? pattern : `${pattern}  in ${where}`);
    }
    case 'WebFetch':
      return text(field(input, 'url'));
    case 'WebSearch':
      return text(field(input, 'query'));
    case 'Task':
    case 'Agent':
      return text(field(input, 'description', 'prompt'));
    default:
      return null;
  }
}

/**
 * Claude Code's built-in tools that cannot change a file: agentsnap does not
 * hook them (a hook costs the agent a process per call) and journals them from
 * the transcript instead (the session's transcript import). Conservative: any tool not
 * named here, MCP tools and tools of future versions included, stays hooked.
 */
export const CLAUDE_READ_ONLY_TOOLS = ['Read', 'Glob', 'Grep', 'LS', 'NotebookRead', 'WebFetch', 'WebSearch'] as const;

/**
 * The tool matcher of agentsnap's Claude Code PreToolUse/PostToolUse(Failure)
 * hooks: every tool name except exactly the read-only ones. Claude Code reads
 * a matcher that is not a plain name list as a JavaScript regex and tests the
 * tool name with it; the negative lookahead is honoured (checked on 2.1.332:
 * Read fires no hook, Write/Edit/Bash/ToolSearch do).
 */
export const CLAUDE_TOOL_MATCHER = `^(?!(?:${CLAUDE_READ_ONLY_TOOLS.join('|')})$)`;

type HookEntries = Record<string, { matcher: string; hooks: { type: 'command'; command: string; timeout?: number }[] }[]>;

/**
 * Claude Code hook settings recording every tool call (PreToolUse, PostToolUse, PostToolUseFailure); for a
 * wrapper's session also SessionStart, which names the transcript before any hooked call (the reads before the
 * first one are journaled before an operation or checkpoint that comes first); SessionEnd when asked.
 */
export function claudeHookSettings(
  commandFor: (event: string) => string,
  opts: { sessionEnd?: boolean; sessionStart?: boolean } = {},
): { hooks: HookEntries } {
  const events = [
    ...(opts.sessionStart ? ['SessionStart'] : []),
    'PreToolUse',
    'PostToolUse',
    'PostToolUseFailure',
    ...(opts.sessionEnd ? ['SessionEnd'] : []),
  ];
  const hooks: HookEntries = {};
  // The session events match every source/reason; the tool events leave out the read-only tools (journaled from the transcript).
  for (const ev of events)
    hooks[ev] = [{ matcher: ev.startsWith('Session') ? '*' : CLAUDE_TOOL_MATCHER, hooks: [{ type: 'command', command: commandFor(ev) }] }];
  return { hooks };
}

function mergeHooks(base: Record<string, unknown>, add: { hooks: HookEntries }): Record<string, unknown> {
  const hooks = { ...((base.hooks && typeof base.hooks === 'object' ? base.hooks : {}) as Record<string, unknown[]>) };
  for (const [ev, entries] of Object.entries(add.hooks)) hooks[ev] = [...(Array.isArray(hooks[ev]) ? hooks[ev] : []), ...entries];
  return { ...base, hooks };
}

/**
 * The claude command with agentsnap's hooks added through `--settings`
 * (merged by Claude Code with the user's settings; no file is edited). A
 * `--settings` the user gave is kept: its content is merged with ours.
 */
export function claudeArgv(command: string[], cwd: string, at: number, commandFor: (event: string) => string): string[] {
  const ours = claudeHookSettings(commandFor, { sessionStart: true });
  const rest = command.slice(at + 1);
  const out: string[] = [];
  let merged = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (arg === '--') {
      out.push(...rest.slice(i));
      break;
    }
    let value: string | undefined;
    if (arg === '--settings' && i + 1 < rest.length) value = rest[++i];
    else if (arg.startsWith('--settings=')) value = arg.slice('--settings='.length);
    if (value === undefined) {
      out.push(arg);
      continue;
    }
    out.push('--settings', JSON.stringify(mergeHooks(readSettingsArg(value, cwd), ours)));
    merged = true;
  }
  if (!merged) out.unshift('--settings', JSON.stringify(ours));
  return [...command.slice(0, at + 1), ...out];
}

/**
 * The claude command with agentsnap's MCP server for this run: `--mcp-config=<json>` right after the program word. The
 * `=` form, because the option takes several values: a separate JSON word would make the prompt after it one more.
 */
export function withMcpConfig(argv: string[], at: number, mcp: McpServerCommand | null): string[] {
  if (!mcp) return argv;
  const config = { mcpServers: { [MCP_SERVER_NAME]: { type: 'stdio', command: mcp.command, args: mcp.args } } };
  return [...argv.slice(0, at + 1), `--mcp-config=${JSON.stringify(config)}`, ...argv.slice(at + 1)];
}

function readSettingsArg(value: string, cwd: string): Record<string, unknown> {
  let text = value;
  if (!value.trim().startsWith('{')) {
    try {
      text = fs.readFileSync(path.resolve(cwd, value), 'utf8');
    } catch (e) {
      throw errors.invalidArgument(`cannot read the --settings file ${value}: ${(e as Error).message}`, { data: { file: value } });
    }
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    /* reported below */
  }
  throw errors.invalidArgument(`the --settings given to claude is not a JSON object: ${value.slice(0, 80)}`, {
    hint: 'agentsnap merges its hooks into it; fix the settings and try again.',
  });
}

/** The in-agent undo command for Claude Code (issue 4): `/agentsnap-undo [N] [--dry-run] [--force]`. */
export const CLAUDE_UNDO_COMMAND = '.claude/commands/agentsnap-undo.md';
const UNDO_MARKER = '<!-- written by `agentsnap init claude`; removed by `agentsnap init --remove claude` -->';
const CLAUDE_UNDO_TEXT = `---
description: Undo tool calls with agentsnap (puts the files back as they were before step N; default the last step)
argument-hint: "[N] [--dry-run] [--force]"
allowed-tools: Bash(agentsnap undo:*), Bash(agentsnap log:*)
---
${UNDO_MARKER}
Run this exact command with the Bash tool, from the project directory, and nothing else before it:

agentsnap undo $ARGUMENTS

Then report to the user in a few lines what it printed: which files were restored, and any warning or
refusal word for word. If it refused because of changes made outside tool calls or an unprotected step,
say so and that \`/agentsnap-undo <N> --force\` would override it; do not run it with --force yourself.
The files are now as they were before that step: do not redo the undone work unless the user asks.
`;

/**
 * Claude Code's plan tools, both families (reference: claude-code-hooks.md): TodoWrite sends the whole list each
 * time; TaskCreate adds one task (its id is in the result: "Task #3 created…", else the next number), TaskUpdate
 * changes one (`status: deleted` removes it).
 */
function nextClaudePlan(plan: readonly PlanItem[], tool: string | null, input: unknown, output: unknown): PlanItem[] | null {
  const inp = obj(input);
  if (!inp) return null;
  if (tool === 'TodoWrite') return planFromList(inp.todos, ['content', 'subject']);
  if (tool === 'TaskCreate') {
    const text = str(inp.subject) ?? str(inp.description);
    if (text === null) return null;
    const said =
      str(obj(obj(output)?.task)?.id) ??
      str(obj(output)?.id) ??
      /#(\d+)/.exec(typeof output === 'string' ? output : JSON.stringify(output ?? ''))?.[1] ??
      null;
    const id = said ?? String(plan.reduce((n, t) => Math.max(n, Number(t.id) || 0), 0) + 1);
    return [...plan, { id, text, status: str(inp.status) ?? 'pending' }];
  }
  if (tool === 'TaskUpdate') {
    const id = str(inp.taskId) ?? str(inp.id);
    if (id === null || !plan.some((t) => t.id === id)) return null;
    if (inp.status === 'deleted') return plan.filter((t) => t.id !== id);
    return plan.map((t) =>
      t.id === id
        ? {
            ...t,
            ...(str(inp.subject) ? { text: str(inp.subject) as string } : {}),
            ...(str(inp.status) ? { status: str(inp.status) as string } : {}),
          }
        : t,
    );
  }
  return null;
}

export const claude: AgentAdapter = {
  name: 'claude',
  product: 'claude-code',
  displayName: 'Claude Code',
  isCommand: (arg, base) => base === 'claude' || base === 'claude-code' || arg.includes('@anthropic-ai/claude-code'),
  transcript: {
    readTail: readTranscriptTail,
    locateCall: locateToolCall,
    unjournaledReads: (tail, opts) => unjournaledReadCalls(tail, { ...opts, tools: CLAUDE_READ_ONLY_TOOLS }),
    readConversation,
    toolsOffered,
  },
  describeCall: describeClaudeCall,
  nextPlan: nextClaudePlan,
  hookSettingsFiles: { project: ['.claude/settings.local.json', '.claude/settings.json'], user: ['.claude/settings.json'] },
  // With `wrap --mcp`, agentsnap's MCP server for this run too: `--mcp-config` (added to the project's and the user's servers).
  wrapArgv: (run) =>
    withMcpConfig(
      claudeArgv(run.command, run.cwd, run.at, (ev) => run.hookCommand(ev)),
      run.at,
      run.mcp,
    ),
  init: {
    file: '.claude/settings.local.json',
    events: [
      ['PreToolUse', true],
      ['PostToolUse', true],
      ['PostToolUseFailure', true],
      ['SessionEnd', false],
    ],
    // Claude Code's read-only tools are journaled from its transcript, not hooked (see CLAUDE_TOOL_MATCHER).
    matcher: CLAUDE_TOOL_MATCHER,
    personal: true,
    extraFiles: [{ file: CLAUDE_UNDO_COMMAND, text: CLAUDE_UNDO_TEXT, marker: UNDO_MARKER }],
    // The project-scope MCP file (claude-code-hooks.md); usually shared, so a committed one is refused as for the hooks.
    mcp: jsonMcpLayout('.mcp.json', {
      personal: false,
      trackedHint:
        'A committed .mcp.json reaches everyone who clones the repository: add the server for yourself with `claude mcp add --scope local agentsnap -- agentsnap mcp`, or run `agentsnap wrap --mcp -- claude`.',
      note: "Claude Code asks once whether to use the MCP servers of the project's .mcp.json: approve agentsnap (see `claude mcp list`).",
      entry: () => ({ type: 'stdio' }),
    }),
  },
  ownsTranscript: (file, sessionAgent) => sessionAgent === null || /claude/i.test(sessionAgent) || file.includes('/.claude/'),
  forkConversation: (at, opts) => forkClaudeTranscript(at, opts),
  compactConversation: (at, digest, opts) => compactClaudeTranscript(at, digest, opts),
};
