// agents/ (above snapshot/, below session/): one adapter per agent —
// claude.ts (with claude-transcript.ts), codex.ts, gemini.ts, generic.ts —
// each owning everything agentsnap knows about that agent: recognising its
// command, injecting hooks for a `wrap` run, the `init` settings it writes and
// removes, refining its hook payloads into the common call shape, telling a
// failed call, its transcript, forking its conversation, the resume command.
// This file is the interface and the shapes agent-neutral code (hook.ts,
// wrap.ts, init.ts, rewind.ts, the session's transcript import) works with;
// registry.ts lists the adapters. Adding an agent = its file(s) + its line in
// registry.ts; nothing outside agents/ names an agent (they ask the registry).
// Adapters read and write the agents' own files only:
// nothing here imports sessions, snapshots, restores or the server.

import type { CallDescription } from './describe.js';

/** An agent's name, as hook commands and sessions record it: one of the registry's (agents/registry.ts AGENTS). */
export type Agent = string;

/** Where a tool call is in the agent's transcript. */
export interface TranscriptPosition {
  path: string;
  /** Byte length of the transcript when the tool call started. */
  offset?: number;
  /** uuid of the transcript line holding the tool call. */
  uuid?: string;
}

/** What one hook call means, whatever agent sent it. */
export interface HookCall {
  /** 'start': the agent started (Claude Code's SessionStart: only its transcript path is used). */
  phase: 'pre' | 'post' | 'start' | 'end' | 'ignore';
  status: 'done' | 'failed' | 'interrupted' | 'unprotected';
  tool: string | null;
  input: unknown;
  output: unknown;
  error: string | null;
  toolUseId: string | null;
  agentSessionId: string | null;
  transcriptPath: string | null;
  cwd: string | null;
  durationMs: number | null;
  agentVersion: string | null;
  model: string | null;
}

/** A hook group in an agent's settings file (Claude Code's shape; Codex and Gemini CLI use the same). */
export type HookGroup = { matcher?: string; hooks?: { type?: string; command?: string; name?: string; timeout?: number }[] };

/** What `wrap` gives an adapter to inject this run's hooks. */
export interface RunContext {
  /** The command line, and the index of the word naming the agent (its own options follow it; 0 when none does). */
  command: string[];
  at: number;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The hook command line for one event of this run (`extra` names the session on the command line too). */
  hookCommand(event: string, extra?: { session: string; worktree: string }): string;
  session: string;
  worktree: string;
  /** The session's state directory (for files the injection keeps while the agent runs). */
  sessionDir: string;
  /** `wrap --mcp`: agentsnap's MCP server (`agentsnap mcp`) to offer the agent for this run; null: none. */
  mcp: McpServerCommand | null;
}

/** How an agent starts agentsnap's MCP server (`agentsnap mcp`): always under the name `agentsnap`. */
export interface McpServerCommand {
  command: string;
  args: string[];
}

/**
 * `init <agent> --mcp`: the agent's project file declaring MCP servers, as its adapter edits it. `add` and `remove`
 * get the file's text (null: no file) and return the new text (`remove`: null when nothing else is left, the file
 * then goes); both leave everything that is not agentsnap's entry as it is, and throw (errors.refused) rather than
 * replace an `agentsnap` entry that is not agentsnap's own.
 */
export interface McpInitLayout {
  file: string;
  add(current: string | null, server: McpServerCommand): string;
  remove(current: string): string | null;
  /** A personal file: init does not refuse when it is committed (else it does, as for the hooks). */
  personal: boolean;
  trackedHint?: string;
  /** Said after adding it (what the user still has to do in the agent, if anything). */
  note?: string;
}

/** State one run's hooks need beside the command line. */
export interface RunHooks {
  /** Variables the agent needs for them. */
  env: Record<string, string>;
  /** After the agent ended: puts back what the injection changed; warnings, one line each. */
  finish(): string[];
}

/** Where `init` writes an agent's project hooks. */
export interface InitLayout {
  /** The settings file holding the hooks, from the top of the worktree. */
  file: string;
  /** The hook events, and whether each takes a tool matcher. */
  events: [string, boolean][];
  /** The tool matcher of the events that take one. */
  matcher: string;
  /** A personal file (never committed by design): init does not refuse when it is tracked. */
  personal: boolean;
  /** Said when the settings file is committed (init refuses: the hooks would reach everyone who clones). */
  trackedHint?: string;
  /** Said after writing the hooks (what the user still has to do, if anything). */
  note?: string;
  /** Files init writes beside the settings (Claude Code's /agentsnap-undo), each recognised by a marker line. */
  extraFiles?: { file: string; text: string; marker: string }[];
  /** `init --mcp`: where agentsnap's MCP server is declared for the project. */
  mcp?: McpInitLayout;
  /** Keys the agent adds to the settings file by itself (Qwen Code's "$version"): a file holding only these after `--remove` goes. */
  agentKeys?: string[];
  /**
   * Hooks that are a program of their own (OpenCode's plugin) rather than entries in a JSON settings file: `file` is
   * then written whole, `text` of the hook command of each of `events`, and is agentsnap's when it holds `marker`.
   * `agentFiles` (from the worktree's top) are what the agent itself creates because of that file (OpenCode's npm
   * install beside its plugins): `text` records which were there before init (`kept` reads them back), and
   * `--remove` takes out the others.
   */
  hookProgram?: {
    text(commandOf: (event: string) => string, kept: string[]): string;
    marker: string;
    kept(text: string): string[];
    agentFiles: string[];
  };
  /**
   * Hooks that are executable files, one per event (Cline's `<folder>/PreToolUse`), instead of entries in a
   * settings file: init writes `file(event)` for each of `events` (mode 0755, kept out of commits) and `file`
   * names their folder. A file of that name that lacks `marker` is the user's: left as it is, and said.
   */
  scripts?: { file(event: string): string; text(hookCommand: string): string; marker: string };
}

/** A conversation forked before a step: the new transcript and how to resume it. */
export interface ChatFork {
  kind: 'transcript';
  /** Whose conversation it is. */
  agent: Agent;
  /** The new transcript file. */
  file: string;
  original: string;
  sessionId: string;
  /** Directory to resume from (Claude Code and Gemini CLI look sessions up by the project directory). */
  cwd: string;
  resumeCommand: string;
  /** `cd <cwd> && <resumeCommand>`, quoted for a POSIX shell: runs as is from anywhere. */
  shellCommand: string;
  /** Lines kept from the original. */
  lines: number;
  /** Other tool calls of the same assistant message that were cut with it. */
  sharedWith: number;
  /**
   * Set when step N's call was made by a subagent, whose calls the main
   * conversation never holds: the tool_use id of the Agent call (in the main
   * conversation) that started it, before which the fork is cut.
   */
  subagentCall: string | null;
  /** The step of that Agent call, when it was recorded. */
  subagentStep: number | null;
}

/** The step a conversation is forked before. */
export interface ForkPoint {
  step: number;
  transcript: TranscriptPosition | null;
  toolUseId: string | null;
  /**
   * How many earlier steps recorded the same call id in the same transcript (0: none): Gemini CLI gives no
   * call id, and its synthetic one (tool and input) repeats when a call does.
   */
  occurrence?: number;
}

/** The size of a conversation as the model is sent it: its messages and their characters. */
export interface ConversationSize {
  messages: number;
  chars: number;
}

/** A forked conversation whose part before the step is one digest message (`undo N --compact`). */
export interface ChatCompact extends ChatFork {
  /** The original conversation, whole, and the compacted one. */
  before: ConversationSize;
  after: ConversationSize;
  /** The digest that replaced everything before the step. */
  digest: string;
}

/** What a digest of the conversation before the step is built from: the entries there, and those kept, in order. */
export type DigestBuilder = (prior: ConversationEntry[], kept: ConversationEntry[]) => string;

/** The end of a transcript, read once per hook call: what locateCall and unjournaledReads look through. */
export interface TranscriptTail {
  buf: Buffer;
  /** Byte offset of buf[0] in the file. */
  from: number;
  /** The file's size when read. */
  size: number;
}

export interface ToolCallLocation extends TranscriptPosition {
  /** Byte offset where the line holding the call starts. */
  lineOffset?: number;
  /** The agent's version and model, from the line holding the call. */
  agentVersion?: string;
  model?: string;
}

/** A finished tool call found in the transcript that no hook recorded. */
export interface TranscriptCall {
  toolUseId: string;
  tool: string;
  input: unknown;
  /** The tool_result's content: its text (blocks joined), or the value as it is. */
  output: unknown;
  isError: boolean;
  /** Still running (no tool_result yet): only its start is known. */
  pending: boolean;
  /** Already journaled as started (an open step): only its end is new. */
  closes: boolean;
  /**
   * The nearest journaled call after this one in the transcript, if any: a
   * read imported after a hooked call of the same message ran (its hooks ran
   * before the message reached the transcript) saw the state before that call.
   */
  before: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** uuid of the assistant line holding the call and the byte offset where that line starts. */
  uuid: string | null;
  lineOffset: number;
  agentVersion: string | null;
  model: string | null;
}

/** What one import found: the calls, and where the next import may start (see `floor`). */
export interface ReadCallScan {
  calls: TranscriptCall[];
  /**
   * Byte offset before which every line of the tail is accounted for: each
   * read there is journaled (done, failed or still open), or was another
   * session's. The next import walks back to it and no further. It stops at
   * the start of a read that has no result yet and was not journaled (its
   * result comes later) and at a torn last line. Null: keep the last one.
   */
  floor: number | null;
}

export interface ReadCallScanOptions {
  journaled: (toolUseId: string) => boolean;
  /** Journaled as started, not yet ended (a read that was still running at the last import). */
  open?: (toolUseId: string) => boolean;
  /** Also return the calls with no result yet (pending) whose line starts before this offset: a hooked call's pre records the reads started before it. */
  pendingBefore?: number;
  since: string | null;
  /** Where the previous import of this transcript left off (its `floor`). */
  floor?: number;
}

export type ConversationEntry =
  | { kind: 'user'; text: string; uuid: string | null; time: string | null }
  | { kind: 'assistant'; text: string; uuid: string | null; time: string | null }
  | { kind: 'tool'; toolUseId: string; name: string | null; input: unknown; uuid: string | null; time: string | null };

/** An agent's transcript as agent-neutral code reads it (hook.ts, the session's import, replay). Never throws. */
export interface TranscriptReader {
  /** The end of the transcript; null when it cannot be read. */
  readTail(file: string): TranscriptTail | null;
  /** Where the call `toolUseId` is (searched in `tail` when the caller has read it already). */
  locateCall(file: string, toolUseId: string | null, tail?: TranscriptTail | null): ToolCallLocation;
  /**
   * The calls of the read-only tools the agent leaves unhooked (Claude Code), which the session then
   * imports from the transcript; absent: every call is hooked.
   */
  unjournaledReads?(tail: TranscriptTail, opts: ReadCallScanOptions): ReadCallScan;
  /** The main conversation: user prompts, assistant text and tool calls, in order. */
  readConversation(file: string): ConversationEntry[];
  /**
   * The names of the tools the agent offered its model, from the newest record of them in `tail` at or
   * after byte `since` of the file (null: none there). Absent: the agent's files do not say.
   */
  toolsOffered?(tail: TranscriptTail, since?: number): string[] | null;
}

/** One item of an agent's task list (its plan). */
export interface PlanItem {
  /** The agent's id for it, when its plan tools give one (Claude Code's TaskCreate). */
  id?: string;
  text: string;
  /** The agent's own word: pending, in_progress, completed (cancelled…). */
  status: string;
}

export interface AgentAdapter {
  readonly name: Agent;
  /** The name its version is journaled under (`claude-code 2.1.3`). */
  readonly product: string;
  /** Whether a command word is this agent: `base` is its program name (lower case, no extension or version). */
  isCommand(arg: string, base: string): boolean;
  /**
   * Refines the common call shape in place: failure in the agent's own words, a call id where it gives none,
   * fields under the agent's own names. `env` is the hook's environment (where the agent keeps its files).
   */
  refineCall?(call: HookCall, payload: Record<string, unknown>, env: NodeJS.ProcessEnv): void;
  /**
   * Its hooks give no call id: the one refineCall makes from the call's tool and input can be shared by two
   * open calls. A post whose id more than one open step has then closes none of them, rather than perhaps the
   * wrong one: they stay open for callEnded (asked at the next pre also for calls that ended well, so it must say
   * a call ended only once its post hook has run) or the session's end to close.
   */
  readonly callIdsFromInput?: boolean;
  /**
   * What a recorded call was, from this agent's own tool input shapes (its shell tool's command, the file its
   * edit tools write…); null for a tool it does not know, which then gets the agent-neutral reading
   * (`describeCallGeneric`).
   */
  describeCall?(tool: string | null, input: unknown): CallDescription | null;
  /**
   * The plan after a call, from the plan before it: the agent's plan tools (Claude Code's TodoWrite and
   * TaskCreate/TaskUpdate, Codex's update_plan, Gemini CLI's write_todos); null for any other tool.
   */
  nextPlan?(plan: readonly PlanItem[], tool: string | null, input: unknown, output: unknown): PlanItem[] | null;
  /** Whether a post-hook call that looks done failed (read from the agent's own files; Codex's rollout). */
  callFailed?(call: HookCall): string | null;
  /**
   * How an open call ended, from the agent's own files, for agents that fire no post hook for some
   * failures (Codex's apply_patch); null while nothing says it ended.
   */
  callEnded?(transcriptPath: string, toolUseId: string): { status: 'done' | 'failed'; error: string | null } | null;
  /** The transcript path to journal for one reported by a hook (Gemini under wrap: where the file ends up). */
  transcriptPath?(sessionDir: string, reported: string): string;
  /** Reading the agent's transcript: where a call is in it, the reads no hook saw, the conversation for replay. */
  readonly transcript?: TranscriptReader;
  /** How messages name it (`Gemini CLI`). */
  readonly displayName: string;
  /** What it calls one model turn that can hold several tool calls (`model response`); default `assistant message`. */
  readonly turnWord?: string;
  /** wrap: the command line with this run's hooks added (no file of the user's edited); throws on a bad argument of the user's. */
  wrapArgv?(run: RunContext): string[];
  /** wrap: state this run's hooks need outside the command line (Gemini's home overlay); undone by `finish`. */
  prepareRun?(run: RunContext): RunHooks;
  /** wrap: puts back what a killed wrapper's prepareRun left; warnings. */
  recover?(sessionsRoot: string): string[];
  /**
   * Ref prefixes the agent itself writes into the user's repository (Cline's `refs/cline/`): agentsnap's pre-push
   * hook refuses them towards a remote that is not a backup remote, as it does its own (`agentsnap.agentRefs`
   * overrides the list), and doctor counts them as the agent's, not the user's.
   */
  readonly repoRefs?: readonly string[];
  /** The agent's settings files that may hold hooks (doctor reports agentsnap's there): from the worktree's top, and from $HOME. */
  readonly hookSettingsFiles?: { project: string[]; user: string[] };
  /** `init <agent>`: the project settings it writes and removes. */
  readonly init?: InitLayout;
  /** Whether a recorded transcript is this agent's (its conversation can then be forked). */
  ownsTranscript?(path: string, sessionAgent: string | null): boolean;
  /** A new conversation cut before `at`, next to the original (never modified); throws when it cannot. */
  forkConversation?(at: ForkPoint, opts: { cwd: string; newId?: string }): ChatFork;
  /**
   * A new conversation in which everything before `at` is one message, the digest `digest` builds from it,
   * and everything from `at` on is kept (the original is never modified); throws when it cannot.
   */
  compactConversation?(at: ForkPoint, digest: DigestBuilder, opts: { cwd: string; newId?: string }): ChatCompact;
}
