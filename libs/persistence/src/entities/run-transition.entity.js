"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.RunTransitionEntity = void 0;
const typeorm_1 = require("typeorm");
/** Append-only history: one row per state transition of a run (updates are refused by a trigger). */
let RunTransitionEntity = class RunTransitionEntity {
    id;
    runId;
    fromStatus;
    toStatus;
    revision;
    workerId;
    createdAt;
};
exports.RunTransitionEntity = RunTransitionEntity;
__decorate([
    (0, typeorm_1.PrimaryGeneratedColumn)({ type: 'bigint' }),
    __metadata("design:type", String)
], RunTransitionEntity.prototype, "id", void 0);
__decorate([
    (0, typeorm_1.Column)('uuid', { name: 'run_id' }),
    __metadata("design:type", String)
], RunTransitionEntity.prototype, "runId", void 0);
__decorate([
    (0, typeorm_1.Column)('text', { name: 'from_status', nullable: true }),
    __metadata("design:type", Object)
], RunTransitionEntity.prototype, "fromStatus", void 0);
__decorate([
    (0, typeorm_1.Column)('text', { name: 'to_status' }),
    __metadata("design:type", String)
], RunTransitionEntity.prototype, "toStatus", void 0);
__decorate([
    (0, typeorm_1.Column)('integer'),
    __metadata("design:type", Number)
], RunTransitionEntity.prototype, "revision", void 0);
__decorate([
    (0, typeorm_1.Column)('text', { name: 'worker_id', nullable: true }),
    __metadata("design:type", Object)
], RunTransitionEntity.prototype, "workerId", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'created_at' }),
    __metadata("design:type", Date)
], RunTransitionEntity.prototype, "createdAt", void 0);
exports.RunTransitionEntity = RunTransitionEntity = __decorate([
    (0, typeorm_1.Entity)({ name: 'run_transitions' })
], RunTransitionEntity);
//# sourceMappingURL=run-transition.entity.js.map