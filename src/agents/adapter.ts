// What every agent adapter gives agentsnap (one file per agent beside this
// one) and the shapes the agent-neutral code (hook, wrap, init, rewind,
// the session's transcript import) works with. Owns no agent's knowledge
// itself; must not import anything above agents/ (sessions, restores, the
// server): adapters know the agents' formats, not agentsnap's machinery.

/** Where a tool call is in the agent's transcript. */
export interface TranscriptPosition {
  path: string;
  /** Byte length of the transcript when the tool call started. */
  offset?: number;
  /** uuid of the transcript line holding the tool call. */
  uuid?: string;
}
