"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.LockingModule = void 0;
const common_1 = require("@nestjs/common");
const run_lease_repository_1 = require("./leases/run-lease.repository");
/** Claims and revision-checked writes. Needs PersistenceModule (global) in the importing app. */
let LockingModule = class LockingModule {
};
exports.LockingModule = LockingModule;
exports.LockingModule = LockingModule = __decorate([
    (0, common_1.Module)({
        providers: [run_lease_repository_1.RunLeaseRepository],
        exports: [run_lease_repository_1.RunLeaseRepository],
    })
], LockingModule);
//# sourceMappingURL=locking.module.js.map