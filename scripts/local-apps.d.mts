// Types of local-apps.mjs, for its spec (test/local-apps.spec.ts).
export interface LocalApp {
  name: string;
  pid: number;
  entry: string;
}
export function runs(pid: number, entry: string): boolean;
export function takeOver(file: string, log: (line: string) => void, graceMs?: number): Promise<void>;
export function recordApps(file: string, apps: LocalApp[]): void;
export function forget(file: string): void;
