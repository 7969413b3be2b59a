// agentsnap's library API. The CLI (src/cli) is a thin layer over it.
export * from './api/api.js';
export { AgentsnapError, ExitCode, errors, isAgentsnapError } from './base/errors.js';
export type { ExitCodeName, ErrorCode } from './base/errors.js';
export { openRepo, MIN_GIT_VERSION } from './git/repo.js';
export type { Repo } from './git/repo.js';
export { assertSessionId, newSessionId, sessionIdProblem } from './base/ids.js';
export {
  startSession,
  recordPre,
  recordPost,
  recordCheckpoint,
  endSession,
  listSessions,
  loadSession,
  selectSession,
  sessionPaths,
  stepRef,
  headRef,
  STEP_REF_PREFIX,
  META_REF_PREFIX,
} from './session/session.js';
export type { SessionSummary, SnapshotResult } from './session/session.js';
export type { Session, Step } from './session/model.js';
export type {
  JournalEvent,
  JournalEventType,
  UnknownEvent,
  ChangedPath,
  SkippedFile,
  StepStatus,
  SessionStatus,
} from './session/journal.js';
export { readJournal, JOURNAL_VERSION } from './session/journal.js';
export { AGENTSNAP_NAME, AGENTSNAP_EMAIL } from './git/run.js';
export { hooks, remoteAdd, remoteRemove, push, fetch, doctor } from './api/sync.js';
export type { HooksReport, HookStatus, InstallResult } from './install/git-hooks.js';
export type { PushResult, FetchResult, FetchedSession, RemoteAddResult } from './backup/sync.js';
export type { DoctorReport, Check } from './doctor/doctor.js';
export { wrap, detectAgent, claudeHookSettings, AGENTSNAP_BIN } from './runtime/wrap.js';
export type { WrapOptions, WrapResult, WrapStart, AgentChoice } from './runtime/wrap.js';
export { runHook, parseHookCall, AGENTS } from './runtime/hook.js';
export type { Agent, HookCall, HookOptions, HookOutcome } from './runtime/hook.js';
export { replay, replayMarkdown, buildReplay } from './api/replay.js';
export type { ReplayEntry, ReplayOptions } from './api/replay.js';
export { redactText, redactValue, truncateValue } from './session/redact.js';
export { resumeSession, recordUnprotected } from './session/session.js';
export { openSession } from './runtime/toolcall.js';
export type { AgentSession, OpenSessionOptions, ToolCallOptions } from './runtime/toolcall.js';
export * from './api/undo.js';
export { opRef } from './restore/undo.js';
export { outsideEffect } from './session/effects.js';
export {
  createSessionWorktree,
  startWorktreeSession,
  readWorktreeMeta,
  agentEnv,
  worktreeConfig,
  defaultWorktreeDir,
  removeSessionWorktree,
} from './worktrees/worktree.js';
export type { WorktreeMeta, CreatedWorktree, WorktreeSession, CreateWorktreeOptions, StartPoint } from './worktrees/worktree.js';
export { sessionsOverview, applySession, promoteSession, discardSession, dropSession } from './worktrees/parallel.js';
export type { SessionOverview, ApplyResult, PromoteResult, DiscardResult } from './worktrees/parallel.js';
export type { UndoApplyResult } from './worktrees/apply-undo.js';
export type { FileStat } from './worktrees/diffstat.js';
export { maybeAutoGc, parseDuration } from './worktrees/gc.js';
export type { GcReport, GcOptions } from './worktrees/gc.js';
export { serveMcp, AgentsnapTools, MCP_TOOLS } from './mcp/server.js';
export type { McpServerOptions, McpTool, McpToolResult, McpToolAnnotations } from './mcp/server.js';
export { agentsnapHooks, AGENT_SDK_HOOK_EVENTS } from './runtime/agent-sdk.js';
export type {
  AgentsnapHooksOptions,
  AgentSdkHooks,
  AgentSdkHookMatcher,
  AgentSdkHookCallback,
  AgentSdkHookEvent,
} from './runtime/agent-sdk.js';
