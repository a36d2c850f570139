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
exports.RunEntity = void 0;
const typeorm_1 = require("typeorm");
const task_entity_1 = require("./task.entity");
let RunEntity = class RunEntity {
    id;
    workflow;
    version;
    /** Where the run waits while ready: see queueName() in libs/streams. */
    queue;
    status;
    revision;
    attempt;
    priority;
    /** JSON. Typed loosely: a recursive JSON type defeats TypeORM's query typings. */
    input;
    /** JSON. */
    output;
    error;
    idempotencyKey;
    dueAt;
    claimedBy;
    heartbeatAt;
    createdAt;
    updatedAt;
    startedAt;
    finishedAt;
    tasks;
};
exports.RunEntity = RunEntity;
__decorate([
    (0, typeorm_1.PrimaryColumn)('uuid'),
    __metadata("design:type", String)
], RunEntity.prototype, "id", void 0);
__decorate([
    (0, typeorm_1.Column)('text'),
    __metadata("design:type", String)
], RunEntity.prototype, "workflow", void 0);
__decorate([
    (0, typeorm_1.Column)('text'),
    __metadata("design:type", String)
], RunEntity.prototype, "version", void 0);
__decorate([
    (0, typeorm_1.Column)('text'),
    __metadata("design:type", String)
], RunEntity.prototype, "queue", void 0);
__decorate([
    (0, typeorm_1.Column)('text'),
    __metadata("design:type", String)
], RunEntity.prototype, "status", void 0);
__decorate([
    (0, typeorm_1.Column)('integer'),
    __metadata("design:type", Number)
], RunEntity.prototype, "revision", void 0);
__decorate([
    (0, typeorm_1.Column)('integer'),
    __metadata("design:type", Number)
], RunEntity.prototype, "attempt", void 0);
__decorate([
    (0, typeorm_1.Column)('integer'),
    __metadata("design:type", Number)
], RunEntity.prototype, "priority", void 0);
__decorate([
    (0, typeorm_1.Column)('jsonb', { nullable: true })
    /** JSON. Typed loosely: a recursive JSON type defeats TypeORM's query typings. */
    ,
    __metadata("design:type", Object)
], RunEntity.prototype, "input", void 0);
__decorate([
    (0, typeorm_1.Column)('jsonb', { nullable: true })
    /** JSON. */
    ,
    __metadata("design:type", Object)
], RunEntity.prototype, "output", void 0);
__decorate([
    (0, typeorm_1.Column)('jsonb', { nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "error", void 0);
__decorate([
    (0, typeorm_1.Column)('text', { name: 'idempotency_key', nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "idempotencyKey", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'due_at' }),
    __metadata("design:type", Date)
], RunEntity.prototype, "dueAt", void 0);
__decorate([
    (0, typeorm_1.Column)('text', { name: 'claimed_by', nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "claimedBy", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'heartbeat_at', nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "heartbeatAt", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'created_at' }),
    __metadata("design:type", Date)
], RunEntity.prototype, "createdAt", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'updated_at' }),
    __metadata("design:type", Date)
], RunEntity.prototype, "updatedAt", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'started_at', nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "startedAt", void 0);
__decorate([
    (0, typeorm_1.Column)('timestamptz', { name: 'finished_at', nullable: true }),
    __metadata("design:type", Object)
], RunEntity.prototype, "finishedAt", void 0);
__decorate([
    (0, typeorm_1.OneToMany)(() => task_entity_1.TaskEntity, (task) => task.run),
    __metadata("design:type", Array)
], RunEntity.prototype, "tasks", void 0);
exports.RunEntity = RunEntity = __decorate([
    (0, typeorm_1.Entity)({ name: 'runs' })
], RunEntity);
//# sourceMappingURL=run.entity.js.map