/**
 * The two built-in purchase-order workflows. Each has a `po` sub-workflow (the order's
 * state) and a `version` sub-workflow (each version's state). A state lists constraints,
 * the states it may move to, and permission aliases: Pike permissions such as
 * `po::partner` that grant workflow permissions and transitions while in that state.
 */
import type { TxnContext } from '../types.js';
import { invalid } from './common.js';
import { agentRolePermissions, getAgent, hasPermission } from './pike-state.js';

export const SYSTEM_OF_RECORD = 'built-in::system_of_record::v1';
export const COLLABORATIVE = 'built-in::collaborative::v1';
export const WORKFLOW_IDS = [SYSTEM_OF_RECORD, COLLABORATIVE] as const;

export const CONSTRAINT = { accepted: 'accepted', closed: 'closed', complete: 'complete', draft: 'draft' } as const;

export const PERM = {
  createPo: 'can-create-po',
  updatePo: 'can-update-po',
  createVersion: 'can-create-po-version',
  updateVersion: 'can-update-po-version',
  updateVersionResponse: 'can-update-po-version-response',
} as const;

/** States a `can-transition-<state>` permission exists for. */
const TRANSITION_STATES = [
  'issued',
  'closed',
  'confirmed',
  'composed',
  'proposed',
  'obsolete',
  'rejected',
  'accepted',
  'declined',
  'modified',
  'editable',
  'review',
  'cancelled',
];

export function transitionPermission(state: string): string {
  if (!TRANSITION_STATES.includes(state)) {
    invalid(`No permission exists to allow transitioning to a state of ${state}`);
  }
  return `can-transition-${state}`;
}

export interface PermissionAlias {
  name: string;
  permissions: string[];
  transitions: string[];
}

export interface WorkflowState {
  /** Empty for the start pseudo-state. */
  name: string;
  isStart: boolean;
  constraints: string[];
  transitions: string[];
  aliases: PermissionAlias[];
}

export interface SubWorkflow {
  name: 'po' | 'version';
  start: WorkflowState;
  states: Map<string, WorkflowState>;
}

export interface Workflow {
  id: string;
  po: SubWorkflow;
  version: SubWorkflow;
}

// Compact table form: alias name → [workflow permissions without `can-`, transitions].
type AliasTable = Record<string, [string[], string[]]>;
type StateTable = Record<string, { c?: string[]; t?: string[]; a?: AliasTable }>;

const ALIAS_PREFIX = 'po::';

function aliases(table: AliasTable | undefined): PermissionAlias[] {
  const out: PermissionAlias[] = [];
  for (const [key, [perms, transitions]] of Object.entries(table ?? {})) {
    // `seller2` and similar keys describe a second alias of the same name.
    const name = ALIAS_PREFIX + key.replace(/[0-9]+$/, '');
    out.push({ name, permissions: perms.map((p) => `can-${p}`), transitions });
  }
  return out;
}

function subWorkflow(name: 'po' | 'version', table: StateTable): SubWorkflow {
  const states = new Map<string, WorkflowState>();
  let start: WorkflowState | undefined;
  for (const [stateName, s] of Object.entries(table)) {
    const state: WorkflowState = {
      name: stateName === 'start' ? '' : stateName,
      isStart: stateName === 'start',
      constraints: s.c ?? [],
      transitions: s.t ?? [],
      aliases: aliases(s.a),
    };
    if (state.isStart) start = state;
    else states.set(stateName, state);
  }
  if (start === undefined) throw new Error(`workflow ${name} lacks a start state`);
  return { name, start, states };
}

const PO_STATES: StateTable = {
  start: {
    t: ['issued'],
    a: {
      buyer: [['create-po', 'create-po-version', 'transition-issued'], ['issued']],
      seller: [['transition-issued'], ['issued']],
      partner: [['create-po', 'transition-issued'], ['issued']],
    },
  },
  issued: {
    t: ['confirmed', 'closed'],
    a: {
      buyer: [['create-po-version', 'update-po-version', 'update-po', 'transition-closed'], ['closed']],
      seller: [['create-po-version', 'update-po-version', 'update-po', 'transition-confirmed'], ['confirmed']],
      partner: [
        ['create-po-version', 'update-po-version', 'update-po', 'transition-confirmed', 'transition-closed'],
        ['confirmed', 'closed'],
      ],
    },
  },
  confirmed: {
    c: ['accepted', 'complete'],
    t: ['issued', 'closed'],
    a: {
      buyer: [['create-po-version', 'update-po', 'transition-issued'], ['issued']],
      seller: [['create-po-version', 'update-po', 'transition-closed'], ['closed']],
      partner: [
        ['create-po-version', 'update-po', 'transition-issued', 'transition-closed'],
        ['issued', 'closed'],
      ],
    },
  },
  closed: { c: ['closed'], a: { buyer: [[], []], seller: [[], []], partner: [[], []] } },
};

const SOR_VERSION_STATES: StateTable = {
  start: {
    t: ['proposed', 'editable'],
    a: {
      buyer: [['create-po-version', 'transition-proposed'], ['proposed']],
      seller: [[], []],
      draft: [['create-po-version', 'transition-editable'], ['editable']],
    },
  },
  proposed: {
    c: ['complete'],
    t: ['obsolete', 'rejected', 'accepted', 'modified'],
    a: {
      buyer: [['update-po-version', 'transition-obsolete'], ['obsolete']],
      seller: [
        ['update-po-version', 'transition-rejected', 'transition-accepted'],
        ['rejected', 'accepted'],
      ],
      seller2: [['update-po-version', 'update-po', 'transition-modified'], ['modified']],
    },
  },
  obsolete: { c: ['complete'], a: { buyer: [[], []], seller: [[], []] } },
  rejected: { c: ['complete'], a: { buyer: [[], []], seller: [[], []] } },
  modified: {
    c: ['complete'],
    t: ['editable', 'review', 'obsolete'],
    a: {
      buyer: [['transition-obsolete'], ['obsolete']],
      seller: [['update-po-version', 'update-po', 'transition-modified', 'update-po-version-response'], []],
      editor: [
        ['transition-editable', 'transition-review'],
        ['review', 'editable'],
      ],
    },
  },
  accepted: {
    c: ['accepted', 'complete'],
    t: ['obsolete'],
    a: { buyer: [['transition-obsolete'], ['obsolete']], seller: [[], []] },
  },
  editable: {
    c: ['draft'],
    t: ['cancelled', 'review', 'editable', 'declined'],
    a: {
      draft: [
        ['update-po-version', 'transition-editable', 'transition-cancelled', 'transition-declined', 'transition-review'],
        ['cancelled', 'review', 'editable', 'declined'],
      ],
    },
  },
  review: {
    c: ['draft', 'complete'],
    t: ['composed', 'declined', 'editable'],
    a: {
      draft: [
        ['update-po-version', 'transition-editable', 'transition-composed', 'transition-declined'],
        ['editable', 'composed', 'declined'],
      ],
    },
  },
  declined: {
    c: ['draft', 'complete'],
    t: ['editable', 'cancelled'],
    a: {
      draft: [
        ['transition-editable', 'transition-cancelled'],
        ['editable', 'cancelled'],
      ],
    },
  },
  composed: { c: ['draft', 'complete'], a: { draft: [[], []] } },
  cancelled: { c: ['draft', 'complete'], a: { draft: [[], []] } },
};

const COLLAB_VERSION_STATES: StateTable = {
  start: { t: ['proposed'], a: { partner: [['create-po-version', 'transition-proposed'], ['proposed']] } },
  proposed: {
    c: ['complete'],
    t: ['obsolete', 'rejected', 'accepted', 'modified'],
    a: {
      partner: [
        ['update-po-version', 'transition-rejected', 'transition-accepted', 'transition-modified', 'transition-obsolete'],
        ['rejected', 'accepted', 'modified', 'obsolete'],
      ],
    },
  },
  rejected: { c: ['complete'], a: { partner: [[], []] } },
  accepted: { c: ['accepted', 'complete'], t: ['obsolete'], a: { partner: [['transition-obsolete'], ['obsolete']] } },
  modified: {
    c: ['complete'],
    t: ['proposed', 'accepted', 'obsolete'],
    a: {
      partner: [
        ['update-po-version', 'update-po', 'update-po-version-response', 'transition-proposed', 'transition-accepted', 'transition-obsolete'],
        ['proposed', 'accepted', 'obsolete'],
      ],
    },
  },
  obsolete: { c: ['complete'], a: { partner: [[], []] } },
};

const WORKFLOWS = new Map<string, Workflow>([
  [SYSTEM_OF_RECORD, { id: SYSTEM_OF_RECORD, po: subWorkflow('po', PO_STATES), version: subWorkflow('version', SOR_VERSION_STATES) }],
  [COLLABORATIVE, { id: COLLABORATIVE, po: subWorkflow('po', PO_STATES), version: subWorkflow('version', COLLAB_VERSION_STATES) }],
]);

export function getWorkflow(id: string): Workflow | undefined {
  return WORKFLOWS.get(id);
}

export function workflowState(sub: SubWorkflow, name: string): WorkflowState | undefined {
  return sub.states.get(name);
}

export function hasConstraint(state: WorkflowState | undefined, constraint: string): boolean {
  return state?.constraints.includes(constraint) ?? false;
}

/**
 * May the signer, acting for its own organization, use `permission` in `state` and move
 * to `desired`? All of: it holds (through Pike) an alias of this state that grants the
 * permission; the aliases its roles list grant it; and the move is allowed (staying in a
 * non-start state always is; otherwise the state and one of the signer's aliases must
 * both list the target).
 */
export function checkWorkflowPermission(ctx: TxnContext, signer: string, permission: string, state: WorkflowState, desired: string): boolean {
  const agent = getAgent(ctx, signer);
  if (agent === undefined) invalid(`The signer is not an Agent: ${signer}`);
  const recordOwner = agent.orgId;
  const agentAliases = agentRolePermissions(ctx, agent, recordOwner);
  let holdsAlias = false;
  for (const alias of state.aliases) {
    if (alias.permissions.includes(permission) && hasPermission(ctx, signer, alias.name, recordOwner)) {
      holdsAlias = true;
    }
  }
  const granted = state.aliases.filter((a) => agentAliases.includes(a.name)).some((a) => a.permissions.includes(permission));
  return holdsAlias && granted && canTransition(state, desired, agentAliases);
}

function canTransition(state: WorkflowState, desired: string, agentAliases: string[]): boolean {
  if (!state.isStart && state.name === desired) return true;
  if (!state.transitions.includes(desired)) return false;
  return state.aliases.some((a) => agentAliases.includes(a.name) && a.transitions.includes(desired));
}
