// Types of build.mjs, for its spec (test/local-apps.spec.ts).
import type { BuildTarget } from './incremental-build.mjs';
export const TARGETS: BuildTarget[];
export const STAMP_DIR: string;
