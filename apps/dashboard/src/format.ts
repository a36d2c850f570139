const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1_000],
];

/** "3 minutes ago", "in 2 hours". */
export function relativeTime(iso: string, now = Date.now()): string {
  const delta = Date.parse(iso) - now;
  for (const [unit, ms] of UNITS) {
    if (Math.abs(delta) >= ms || unit === 'second') return relative.format(Math.round(delta / ms), unit);
  }
  return iso;
}

/** The absolute time in the browser's zone, to the second: "2026-12-01 14:03:05". */
export function absoluteTime(iso: string): string {
  const date = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** "850 ms", "12.3 s", "4 min 5 s", "2 h 10 min". */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

export function between(from: string | null | undefined, to: string | null | undefined): string | undefined {
  return from && to ? duration(Date.parse(to) - Date.parse(from)) : undefined;
}

/**
 * A short label for a UUIDv7 (runs', schedules'): its last 8 hex digits, which are random. Its first ones are a
 * timestamp that changes only every ~65 s, so the runs started together would all share them.
 */
export const shortId = (id: string) => id.slice(-8);
