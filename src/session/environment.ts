// The agent's environment as of a step (issue 16), derived from the journal
// when asked: the directory the call ran in, the agent and its version, the
// model, and the command the session was started with. Nothing extra is
// recorded on the tool-call path but the call's directory when the agent left
// the session's. Not recorded: the values of environment variables (never),
// and the tools the agent had (no agent's hook payload or transcript says).
import type { Session } from './model.js';

export interface StepEnvironment {
  cwd: string;
  agent: string | null;
  /** `claude-code 2.1.3`: the newest version a step up to this one recorded. */
  agentVersion: string | null;
  model: string | null;
  command: string[] | null;
}

export function environmentAt(s: Session, step: number): StepEnvironment {
  let agentVersion: string | null = null;
  let model: string | null = null;
  let cwd = s.cwd;
  for (const st of s.steps) {
    if (st.step > step) break;
    if (st.agentVersion) agentVersion = st.agentVersion;
    if (st.model) model = st.model;
    if (st.step === step) cwd = st.cwd ?? s.cwd;
  }
  return { cwd, agent: s.agent, agentVersion, model, command: s.command };
}
