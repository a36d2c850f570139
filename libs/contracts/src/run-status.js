"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TASK_STATUSES = exports.TERMINAL_RUN_STATUSES = exports.RUN_STATUSES = void 0;
exports.isTerminalStatus = isTerminalStatus;
exports.RUN_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'];
/** A run in one of these states never changes again. */
exports.TERMINAL_RUN_STATUSES = ['completed', 'failed', 'cancelled'];
function isTerminalStatus(status) {
    return exports.TERMINAL_RUN_STATUSES.includes(status);
}
exports.TASK_STATUSES = ['completed', 'failed'];
//# sourceMappingURL=run-status.js.map