"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const globals_1 = require("@jest/globals");
const ids_1 = require("./ids");
(0, globals_1.describe)('uuidv7', () => {
    (0, globals_1.it)('is a version 7, variant 1 UUID', () => {
        (0, globals_1.expect)((0, ids_1.uuidv7)()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });
    (0, globals_1.it)('sorts by creation time', () => {
        const earlier = (0, ids_1.uuidv7)(1_700_000_000_000);
        const later = (0, ids_1.uuidv7)(1_700_000_000_001);
        (0, globals_1.expect)(earlier < later).toBe(true);
    });
});
//# sourceMappingURL=ids.spec.js.map