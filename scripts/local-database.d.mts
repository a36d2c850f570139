// Types of local-database.mjs, for test/readme-configuration.spec.ts.
export const EMBEDDED_DEFAULT_PORT: number;
export const EMBEDDED_PORT: number;
export const EMBEDDED_USER: string;
export const EMBEDDED_PASSWORD: string;
export const EMBEDDED_DATABASE: string;
export function embeddedUrl(database?: string, port?: number): string;
