"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CLAIM_LIMIT_MAX = exports.REVISION_MAX = void 0;
exports.parseClaimRequest = parseClaimRequest;
exports.parseHeartbeatRequest = parseHeartbeatRequest;
exports.parseTaskResultRequest = parseTaskResultRequest;
exports.parseCompleteRunRequest = parseCompleteRunRequest;
exports.parseFailRunRequest = parseFailRunRequest;
const run_contracts_1 = require("./run.contracts");
const run_status_1 = require("./run-status");
const validation_1 = require("./validation");
/**
 * The worker protocol (worker <-> coordinator). Every write carries the revision the worker
 * received with its claim; the coordinator applies it only if the run is still running at that
 * revision (see libs/locking).
 */
exports.REVISION_MAX = 2_147_483_647;
exports.CLAIM_LIMIT_MAX = 500;
function parseRevision(value) {
    return (0, validation_1.parseInteger)(value, 'expectedRevision', 0, exports.REVISION_MAX);
}
function parseClaimRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['workerId', 'workflows', 'limit', 'waitMs'], 'request body');
    if (!Array.isArray(body.workflows) || body.workflows.length === 0 || body.workflows.length > 1000) {
        (0, validation_1.fail)('invalid_workflows', 'workflows must be a non-empty array of {name, version}');
    }
    const workflows = body.workflows.map((item) => {
        const ref = (0, validation_1.requireObject)(item, 'workflows[]');
        (0, validation_1.rejectUnknownFields)(ref, ['name', 'version'], 'workflows[]');
        return { name: (0, validation_1.parseIdentifier)(ref.name, 'workflow'), version: (0, validation_1.parseIdentifier)(ref.version, 'version') };
    });
    return {
        workerId: (0, validation_1.parseKey)(body.workerId, 'workerId'),
        workflows,
        limit: (0, validation_1.parseInteger)(body.limit, 'limit', 1, exports.CLAIM_LIMIT_MAX),
        waitMs: (0, run_contracts_1.parseWaitMs)(body.waitMs),
    };
}
function parseHeartbeatRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['workerId', 'runs'], 'request body');
    if (!Array.isArray(body.runs) || body.runs.length > 10_000) {
        (0, validation_1.fail)('invalid_runs', 'runs must be an array of {id, expectedRevision}');
    }
    return {
        workerId: (0, validation_1.parseKey)(body.workerId, 'workerId'),
        runs: body.runs.map((item) => {
            const run = (0, validation_1.requireObject)(item, 'runs[]');
            (0, validation_1.rejectUnknownFields)(run, ['id', 'expectedRevision'], 'runs[]');
            return { id: (0, validation_1.parseRunId)(run.id, 'id'), expectedRevision: parseRevision(run.expectedRevision) };
        }),
    };
}
function parseTaskResultRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['expectedRevision', 'key', 'name', 'status', 'attempts', 'output', 'error'], 'request body');
    if (!run_status_1.TASK_STATUSES.includes(body.status)) {
        (0, validation_1.fail)('invalid_status', `status must be one of ${run_status_1.TASK_STATUSES.join(', ')}`);
    }
    const status = body.status;
    if (status === 'failed' && body.error === undefined)
        (0, validation_1.fail)('invalid_error', 'a failed task needs an error');
    return {
        expectedRevision: parseRevision(body.expectedRevision),
        key: (0, validation_1.parseKey)(body.key, 'key'),
        name: (0, validation_1.parseKey)(body.name, 'name'),
        status,
        attempts: (0, validation_1.parseInteger)(body.attempts, 'attempts', 1, 1_000_000),
        output: status === 'completed' ? (0, validation_1.parseJson)(body.output, 'output') : null,
        error: status === 'failed' ? (0, run_contracts_1.parseErrorDetails)(body.error, 'error') : null,
    };
}
function parseCompleteRunRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['expectedRevision', 'output'], 'request body');
    return { expectedRevision: parseRevision(body.expectedRevision), output: (0, validation_1.parseJson)(body.output, 'output') };
}
function parseFailRunRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['expectedRevision', 'error'], 'request body');
    return { expectedRevision: parseRevision(body.expectedRevision), error: (0, run_contracts_1.parseErrorDetails)(body.error, 'error') };
}
//# sourceMappingURL=worker.contracts.js.map