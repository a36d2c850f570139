/** What `wf` exits with; documented in the README's "Command line" section. */
export const EXIT_OK = 0;
/** An API error, an unreachable coordinator, or a run that failed or was cancelled (`--wait`, `watch`). */
export const EXIT_FAILED = 1;
/** The command line itself is wrong: nothing was sent. */
export const EXIT_USAGE = 2;
/** Ctrl-C (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;
