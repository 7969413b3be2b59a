// agentsnap's library API. The CLI (src/cli) is a thin layer over it.
export * from './api.js';
export { AgentsnapError, ExitCode, errors, isAgentsnapError } from './errors.js';
export type { ExitCodeName } from './errors.js';
export { openRepo, MIN_GIT_VERSION } from './repo.js';
export type { Repo } from './repo.js';
export { assertSessionId, newSessionId, sessionIdProblem } from './ids.js';
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
} from './session.js';
export type { SessionSummary, SnapshotResult } from './session.js';
export type { Session, Step } from './model.js';
export type {
  JournalEvent,
  ChangedPath,
  SkippedFile,
  StepStatus,
  SessionStatus,
} from './journal.js';
export { readJournal, JOURNAL_VERSION } from './journal.js';
export { AGENTSNAP_NAME, AGENTSNAP_EMAIL } from './git/run.js';
export { hooks, remoteAdd, remoteRemove, push, fetch, doctor } from './sync-api.js';
export type { HooksReport, HookStatus, InstallResult } from './hooks-install.js';
export type { PushResult, FetchResult, FetchedSession, RemoteAddResult } from './sync.js';
export type { DoctorReport, Check } from './doctor.js';
export { wrap, detectAgent, claudeHookSettings, AGENTSNAP_BIN } from './wrap.js';
export type { WrapOptions, WrapResult, WrapStart, AgentChoice } from './wrap.js';
export { runHook, parseHookCall, AGENTS } from './hook.js';
export type { Agent, HookCall, HookOptions, HookOutcome } from './hook.js';
export { replay, replayMarkdown, buildReplay } from './replay.js';
export type { ReplayEntry, ReplayOptions } from './replay.js';
export { redactText, redactValue, truncateValue } from './redact.js';
export { resumeSession, recordUnprotected } from './session.js';
export { openSession } from './toolcall.js';
export type { AgentSession, OpenSessionOptions, ToolCallOptions } from './toolcall.js';
export * from './api-undo.js';
export { opRef } from './undo.js';
export { outsideEffect } from './effects.js';
export {
  createSessionWorktree,
  startWorktreeSession,
  readWorktreeMeta,
  agentEnv,
  worktreeConfig,
  defaultWorktreeDir,
  removeSessionWorktree,
} from './worktree.js';
export type { WorktreeMeta, CreatedWorktree, WorktreeSession, CreateWorktreeOptions, StartPoint } from './worktree.js';
export { sessionsOverview, applySession, promoteSession, discardSession, dropSession } from './parallel.js';
export type { SessionOverview, ApplyResult, PromoteResult, DiscardResult } from './parallel.js';
export { maybeAutoGc, parseDuration } from './gc.js';
export type { GcReport, GcOptions } from './gc.js';
