"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.queueName = queueName;
const contracts_1 = require("../../contracts/src/index.js");
/**
 * Where ready runs of one workflow version wait: `<workflow>:<version>` or, routed to a shard,
 * `<workflow>:<version>:<shard>`. Names are built only from validated identifiers, which cannot
 * contain ':', so a queue name is unambiguous and safe inside database values and Redis keys.
 */
function queueName(workflow, version, shard) {
    const base = `${(0, contracts_1.parseIdentifier)(workflow, 'workflow')}:${(0, contracts_1.parseIdentifier)(version, 'version')}`;
    return shard === undefined ? base : `${base}:${(0, contracts_1.parseIdentifier)(shard, 'shard')}`;
}
//# sourceMappingURL=queue-naming.js.map