// Any other agent (or a script): nothing is injected; it brackets its tool
// calls itself with `agentsnap snap --phase pre|post` (AGENTSNAP_SESSION is
// set for it by wrap), or a hook of its own runs `agentsnap hook generic
// <pre|post>` with a payload in Claude Code's field names.
import type { AgentAdapter } from './adapter.js';

export const generic: AgentAdapter = {
  name: 'generic',
  product: 'generic',
  displayName: 'the agent',
  isCommand: () => false,
};
