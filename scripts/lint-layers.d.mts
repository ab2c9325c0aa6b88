/** Types of scripts/lint-layers.mjs, for its test. */
export interface Layer {
  floor: string;
  what: string;
  holds: string[];
}
export interface Allowed {
  pair: string;
  why: string;
}
export interface AllowedCircle {
  ring: string;
  why: string;
}
export interface LayerReport {
  figures: { floors: number; modules: number; imports: number; upward: number; circles: number };
  upward: Array<{ pair: string; via: string[]; allowed: string | null }>;
  circles: Array<{ ring: string; allowed: string | null }>;
  findings: string[];
}
export const LAYERS: Layer[];
export const UPWARD_ALLOWED: Allowed[];
export const CIRCLES_ALLOWED: AllowedCircle[];
export function placeOf(file: string, layers?: Layer[]): { entry: string; floor: number } | null;
export function importsOf(root: string, files: string[]): Array<{ from: string; to: string }>;
export function circles(files: string[], edges: Array<{ from: string; to: string }>): string[][];
export function check(root: string, opts?: { layers?: Layer[]; upwardAllowed?: Allowed[]; circlesAllowed?: AllowedCircle[] }): LayerReport;
