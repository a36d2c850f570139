"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.WAIT_MS_MAX = exports.LIST_LIMIT_MAX = exports.PRIORITY_MAX = exports.PRIORITY_MIN = void 0;
exports.parseStartRunRequest = parseStartRunRequest;
exports.parseListRunsQuery = parseListRunsQuery;
exports.parseWaitMs = parseWaitMs;
exports.parseErrorDetails = parseErrorDetails;
const validation_1 = require("./validation");
exports.PRIORITY_MIN = -1000;
exports.PRIORITY_MAX = 1000;
function parseStartRunRequest(raw) {
    const body = (0, validation_1.requireObject)(raw, 'request body');
    (0, validation_1.rejectUnknownFields)(body, ['workflow', 'version', 'input', 'idempotencyKey', 'priority', 'runAt'], 'request body');
    return {
        workflow: (0, validation_1.parseIdentifier)(body.workflow, 'workflow'),
        version: (0, validation_1.parseIdentifier)(body.version, 'version'),
        input: (0, validation_1.parseJson)(body.input, 'input'),
        idempotencyKey: body.idempotencyKey === undefined ? undefined : (0, validation_1.parseKey)(body.idempotencyKey, 'idempotencyKey'),
        priority: body.priority === undefined ? 0 : (0, validation_1.parseInteger)(body.priority, 'priority', exports.PRIORITY_MIN, exports.PRIORITY_MAX),
        runAt: body.runAt === undefined ? undefined : (0, validation_1.parseTimestamp)(body.runAt, 'runAt'),
    };
}
exports.LIST_LIMIT_MAX = 500;
function parseListRunsQuery(raw, statuses) {
    (0, validation_1.rejectUnknownFields)(raw, ['workflow', 'status', 'limit', 'cursor'], 'query');
    if (raw.status !== undefined && !statuses.includes(raw.status)) {
        (0, validation_1.fail)('invalid_status', `status must be one of ${statuses.join(', ')}`);
    }
    return {
        workflow: raw.workflow === undefined ? undefined : (0, validation_1.parseIdentifier)(raw.workflow, 'workflow'),
        status: raw.status,
        limit: raw.limit === undefined ? 50 : (0, validation_1.parseInteger)(raw.limit, 'limit', 1, exports.LIST_LIMIT_MAX),
        cursor: raw.cursor === undefined ? undefined : (0, validation_1.parseKey)(raw.cursor, 'cursor'),
    };
}
exports.WAIT_MS_MAX = 60_000;
function parseWaitMs(raw) {
    return raw === undefined ? 0 : (0, validation_1.parseInteger)(raw, 'waitMs', 0, exports.WAIT_MS_MAX);
}
function parseErrorDetails(raw, field) {
    const error = (0, validation_1.requireObject)(raw, field);
    (0, validation_1.rejectUnknownFields)(error, ['name', 'message', 'stack'], field);
    if (typeof error.message !== 'string')
        (0, validation_1.fail)(`invalid_${field}`, `${field}.message must be a string`);
    const details = (0, validation_1.parseJson)({ name: typeof error.name === 'string' ? error.name : 'Error', message: error.message, stack: error.stack }, field);
    if (details.stack !== undefined && typeof details.stack !== 'string') {
        (0, validation_1.fail)(`invalid_${field}`, `${field}.stack must be a string`);
    }
    return details;
}
//# sourceMappingURL=run.contracts.js.map