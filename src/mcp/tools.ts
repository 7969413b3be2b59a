// The tools of `agentsnap mcp` (src/mcp/server.ts) as tools/list gives them: names, descriptions for the model, JSON
// schemas and annotations, and the check of a call's arguments against those schemas (the low-level SDK Server
// validates nothing itself). Data and a pure check only: what each tool does is src/mcp/server.ts's.
import { errors } from '../base/errors.js';

/** A JSON Schema of the small kind the tools use (objects of strings, whole numbers, booleans, string lists). */
export interface PropSchema {
  type: 'string' | 'integer' | 'boolean' | 'array';
  description: string;
  minimum?: number;
  minLength?: number;
  minItems?: number;
  items?: { type: 'string'; minLength?: number };
  default?: unknown;
}

export interface ToolSchema {
  type: 'object';
  properties: Record<string, PropSchema>;
  required?: string[];
  additionalProperties: false;
}

export interface McpToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface McpTool {
  name: string;
  description: string;
  inputSchema: ToolSchema;
  annotations: McpToolAnnotations;
}

export interface McpToolResult {
  content: { type: 'text'; text: string }[];
  isError?: boolean;
}

const readOnly = (title: string): McpToolAnnotations => ({
  title,
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});
const destructive = (title: string): McpToolAnnotations => ({
  title,
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: false,
});

const stepProp = (description: string, minimum = 1): PropSchema => ({ type: 'integer', minimum, description });
const dryRunProp: PropSchema = {
  type: 'boolean',
  default: true,
  description:
    'true (the default): only report exactly which files would change and whether it would be refused; change nothing. Pass false to do it.',
};
const forceProp: PropSchema = {
  type: 'boolean',
  default: false,
  description:
    "Go ahead over changes made outside the recorded tool calls (usually the user's own edits) and over unprotected steps. Only after the user agreed: those changes are kept in a safety snapshot, but their files are overwritten.",
};

const exactProp: PropSchema = {
  type: 'boolean',
  default: false,
  description:
    "The worktree exactly as at the target, refusing where the user's edits would be lost. Default (false): take back only what the recorded tool calls changed, keep files only the user changed since.",
};
const mergeProp: PropSchema = {
  type: 'boolean',
  default: false,
  description:
    "A file both the agent and the user changed since: keep the user's edit with the agent's changes taken out (git merge-file; a conflict changes nothing). Default: such a file is refused.",
};

/** The tools, as tools/list gives them. */
export const MCP_TOOLS: McpTool[] = [
  {
    name: 'list_steps',
    description:
      'List the recorded steps of this agentsnap session: every tool call of the agent (and checkpoints) with its number, tool, status, what it was (command or file) and the files it changed, and which steps are undone. Step numbers are what show_step, diff, undo and restore_file take. Start here.',
    inputSchema: {
      type: 'object',
      properties: {
        last: stepProp('Only the last N steps.'),
        tool: { type: 'string', minLength: 1, description: 'Only steps of this tool (e.g. Edit, Bash).' },
        paths: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          description: 'Only steps that changed one of these paths (relative to the worktree root; a directory covers what is below it).',
        },
      },
      additionalProperties: false,
    },
    annotations: readOnly('List agentsnap steps'),
  },
  {
    name: 'show_step',
    description:
      "Show what step N changed, as a unified diff (the files as they were before the call and after it), with the step's tool and what it was.",
    inputSchema: {
      type: 'object',
      properties: {
        step: stepProp('The step number (see list_steps).', 0),
        stat: { type: 'boolean', default: false, description: 'A diffstat instead of the patch.' },
      },
      required: ['step'],
      additionalProperties: false,
    },
    annotations: readOnly('Show an agentsnap step'),
  },
  {
    name: 'diff',
    description:
      'Diff two recorded states of the session, or a state and the worktree as it is now. A state is "N" (after step N), "N:pre" (before step N) or "0" (the session\'s start). Without "to": against the worktree now.',
    inputSchema: {
      type: 'object',
      properties: {
        from: { type: 'string', minLength: 1, description: 'A state: "N", "N:pre" or "0".' },
        to: { type: 'string', minLength: 1, description: 'Another state; leave out for the worktree as it is now.' },
        paths: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Only these paths (relative to the worktree root).' },
        stat: { type: 'boolean', default: false, description: 'A diffstat instead of the patch.' },
      },
      required: ['from'],
      additionalProperties: false,
    },
    annotations: readOnly('Diff agentsnap states'),
  },
  {
    name: 'search_history',
    description:
      'Find the steps whose recorded input, output, error or message holds a text (plain text, any case; as recorded, secrets redacted): e.g. which step ran "rm -rf" or wrote a given string. Lists them as list_steps does.',
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, description: 'The text to look for.' },
        all_sessions: { type: 'boolean', default: false, description: 'Search every session of the repository, not only this one.' },
        last: stepProp('Only the last N matching steps.'),
      },
      required: ['text'],
      additionalProperties: false,
    },
    annotations: readOnly('Search agentsnap history'),
  },
  {
    name: 'undo',
    description:
      'Take back what step N and every later step changed (without step: the last step not undone); files only the user changed since (outside the recorded tool calls) are kept as they are, files both changed are refused unless merge or force is true (exact: true puts the worktree exactly as before step N instead). Call it first as it is (dry_run defaults to true: it only reports which files would change and whether it would be refused), then again with dry_run: false to do it. Files only: the conversation still holds the undone calls, so re-read files before editing them. redo takes an undo back.',
    inputSchema: {
      type: 'object',
      properties: {
        step: stepProp('The first step to undo (see list_steps); every later step is undone too.'),
        dry_run: dryRunProp,
        force: forceProp,
        exact: exactProp,
        merge: mergeProp,
      },
      additionalProperties: false,
    },
    annotations: destructive('Undo agentsnap steps'),
  },
  {
    name: 'redo',
    description:
      'Take the last undo back: the worktree returns to how it was just before that undo (steps recorded after the undo are replaced, their files kept in a safety snapshot). dry_run defaults to true: call it first as it is, then with dry_run: false.',
    inputSchema: {
      type: 'object',
      properties: { dry_run: dryRunProp, force: forceProp, exact: exactProp, merge: mergeProp },
      additionalProperties: false,
    },
    annotations: destructive('Redo (take an undo back)'),
  },
  {
    name: 'restore_file',
    description:
      'Bring specific files (or directories) back as they were before step N (or after it, with after: true), leaving every other file as it is. dry_run defaults to true: call it first as it is, then with dry_run: false. The same rule, refusals, force, exact and merge as undo.',
    inputSchema: {
      type: 'object',
      properties: {
        step: stepProp('The step number (see list_steps).'),
        paths: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          minItems: 1,
          description: 'Files or directories, relative to the worktree root.',
        },
        after: { type: 'boolean', default: false, description: 'The state after step N instead of before it.' },
        dry_run: dryRunProp,
        force: forceProp,
        exact: exactProp,
        merge: mergeProp,
      },
      required: ['step', 'paths'],
      additionalProperties: false,
    },
    annotations: destructive('Restore files from agentsnap'),
  },
  {
    name: 'list_operations',
    description:
      "List the session's operations (undo, redo, restore, revert, apply, op undo), oldest first, each with its id, what it did, the files it changed and whether it was taken back. undo_operation takes one back by its id.",
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: readOnly('List agentsnap operations'),
  },
  {
    name: 'undo_operation',
    description:
      "Take back one operation (default: the last one; see list_operations for ids): an undo, redo, restore, revert, apply or an earlier undo_operation, keeping the user's edits made since. dry_run defaults to true: call it first as it is, then with dry_run: false. Taking back an undo brings its steps back; taking back a revert brings the reverted step's changes back.",
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', minLength: 1, description: 'The operation id list_operations gives (default: the last operation).' },
        dry_run: dryRunProp,
        force: forceProp,
      },
      additionalProperties: false,
    },
    annotations: destructive('Take back an agentsnap operation'),
  },
  {
    name: 'check',
    description:
      "Run the project's check command (the one the user configured with `git config agentsnap.check`, never one given here) against the recorded state after step N (default: the newest), in a throwaway worktree: the worktree itself is not touched. Says pass or fail, with the end of the output.",
    inputSchema: {
      type: 'object',
      properties: {
        step: stepProp('The state after this step (0: the session start); default the newest.', 0),
        fresh: { type: 'boolean', default: false, description: 'Run again even where the same command already ran on the same state.' },
      },
      additionalProperties: false,
    },
    annotations: {
      title: 'Run the agentsnap check',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
  {
    name: 'bisect',
    description:
      "Find the first step whose state fails the project's check command (`git config agentsnap.check`, never one given here), by binary search over the recorded states, in throwaway worktrees. Gives that step and its diff.",
    inputSchema: {
      type: 'object',
      properties: {
        good: stepProp('A state known to pass (default 0, the session start).', 0),
        bad: stepProp('A state known to fail (default: the newest step).', 0),
      },
      additionalProperties: false,
    },
    annotations: {
      title: 'Bisect with the agentsnap check',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
];

export type Args = Record<string, unknown>;

/** The arguments checked against the tool's schema: unknown names, wrong types and missing ones are refused (a `command` never reaches check). */
export function checkArgs(tool: McpTool, raw: unknown): Args {
  const args = raw === undefined || raw === null ? {} : raw;
  if (typeof args !== 'object' || Array.isArray(args)) throw errors.invalidArgument(`${tool.name} takes an object of arguments.`);
  const a = args as Args;
  const props = tool.inputSchema.properties;
  for (const k of Object.keys(a)) {
    if (!(k in props))
      throw errors.invalidArgument(
        `${tool.name} has no argument ${JSON.stringify(k)}; it takes ${Object.keys(props).join(', ') || 'none'}.`,
      );
  }
  for (const k of tool.inputSchema.required ?? []) if (a[k] === undefined) throw errors.invalidArgument(`${tool.name} needs ${k}.`);
  for (const [k, v] of Object.entries(a)) {
    const p = props[k]!;
    const bad = (what: string) => errors.invalidArgument(`${tool.name}: ${k} must be ${what}, not ${JSON.stringify(v)}.`);
    if (v === undefined) continue;
    if (p.type === 'integer' && (typeof v !== 'number' || !Number.isInteger(v) || v < (p.minimum ?? -Infinity)))
      throw bad(`a whole number of ${p.minimum ?? 0} or more`);
    if (p.type === 'boolean' && typeof v !== 'boolean') throw bad('true or false');
    if (p.type === 'string' && (typeof v !== 'string' || v.length < (p.minLength ?? 0))) throw bad('a text');
    if (p.type === 'array' && (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '') || v.length < (p.minItems ?? 0)))
      throw bad(`a list of ${p.minItems ? 'at least one ' : ''}path${p.minItems === 1 ? '' : 's'}`);
  }
  return a;
}
