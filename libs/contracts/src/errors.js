"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RunAlreadyTerminalError = exports.RevisionConflictError = exports.RunNotFoundError = exports.InvalidRequestError = exports.EngineError = void 0;
/**
 * Domain errors shared by the coordinator (which maps them to HTTP at its edge) and the SDK
 * (which rebuilds them from error bodies). `reason` is the stable, machine-readable part.
 */
class EngineError extends Error {
    reason;
    constructor(reason, message) {
        super(message);
        this.reason = reason;
        this.name = new.target.name;
    }
}
exports.EngineError = EngineError;
/** The request itself is wrong (400): nothing was changed. */
class InvalidRequestError extends EngineError {
    statusCode = 400;
}
exports.InvalidRequestError = InvalidRequestError;
class RunNotFoundError extends EngineError {
    statusCode = 404;
    constructor(runId) {
        super('run_not_found', `run ${runId} does not exist`);
    }
}
exports.RunNotFoundError = RunNotFoundError;
/**
 * The run moved on since the caller last saw it (409): another worker claimed it, it was
 * cancelled, or it already finished. The write was not applied.
 */
class RevisionConflictError extends EngineError {
    expectedRevision;
    statusCode = 409;
    constructor(runId, expectedRevision) {
        super('revision_conflict', `run ${runId} is no longer at revision ${expectedRevision} in a running state`);
        this.expectedRevision = expectedRevision;
    }
}
exports.RevisionConflictError = RevisionConflictError;
class RunAlreadyTerminalError extends EngineError {
    statusCode = 409;
    constructor(runId, status) {
        super('run_terminal', `run ${runId} is already ${status}`);
    }
}
exports.RunAlreadyTerminalError = RunAlreadyTerminalError;
//# sourceMappingURL=errors.js.map