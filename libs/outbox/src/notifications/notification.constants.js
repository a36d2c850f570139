"use strict";
/** NOTIFY channels. Payloads are small identifiers only, never documents (NOTIFY caps them at 8000 bytes). */
Object.defineProperty(exports, "__esModule", { value: true });
exports.NOTIFICATION_LISTENER_OPTIONS = exports.RUN_FINISHED_CHANNEL = exports.RUNS_READY_CHANNEL = void 0;
/** A run became ready to claim; payload: its queue name. */
exports.RUNS_READY_CHANNEL = 'wf_runs_ready';
/** A run reached a terminal state; payload: its id. */
exports.RUN_FINISHED_CHANNEL = 'wf_run_finished';
exports.NOTIFICATION_LISTENER_OPTIONS = Symbol('NOTIFICATION_LISTENER_OPTIONS');
//# sourceMappingURL=notification.constants.js.map