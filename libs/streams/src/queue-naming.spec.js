"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const contracts_1 = require("../../contracts/src/index.js");
const globals_1 = require("@jest/globals");
const queue_naming_1 = require("./queue-naming");
(0, globals_1.describe)('queueName', () => {
    (0, globals_1.it)('joins workflow, version and optional shard', () => {
        (0, globals_1.expect)((0, queue_naming_1.queueName)('order-processing', '1.0.0')).toBe('order-processing:1.0.0');
        (0, globals_1.expect)((0, queue_naming_1.queueName)('order-processing', '1.0.0', 'eu-west')).toBe('order-processing:1.0.0:eu-west');
    });
    globals_1.it.each([
        ['', '1'],
        ['a:b', '1'],
        ['ok', 'v 1'],
        ['x'.repeat(129), '1'],
    ])('refuses unsafe parts (%j, %j)', (workflow, version) => {
        (0, globals_1.expect)(() => (0, queue_naming_1.queueName)(workflow, version)).toThrow(contracts_1.InvalidRequestError);
    });
});
//# sourceMappingURL=queue-naming.spec.js.map