// Types of incremental-build.mjs, for its spec (test/local-apps.spec.ts).
export interface BuildTarget {
  name: string;
  /** Files and folders (relative to the root) whose content the output depends on. */
  inputs: string[];
  /** What a build leaves (relative to the root): a missing one means building again. */
  outputs: string[];
  /** The command and its arguments, run in the root. */
  command: string[];
}
export function hashInputs(root: string, inputs: string[]): string;
export function staleness(root: string, stampDir: string, target: BuildTarget): string | undefined;
export function buildTargets(options: { root: string; stampDir: string; targets: BuildTarget[]; force?: boolean; log?: (line: string) => void }): string[];
