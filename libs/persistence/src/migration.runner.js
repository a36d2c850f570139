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
var MigrationRunner_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.MigrationRunner = void 0;
const common_1 = require("@nestjs/common");
const typeorm_1 = require("typeorm");
/** Any constant shared by every process that migrates this schema. */
const MIGRATION_LOCK_KEY = 7_311_947_201;
/**
 * Applies pending migrations when the app starts. Several coordinators may start at once, so
 * they take turns on a session-level advisory lock; the second one finds nothing left to do.
 */
let MigrationRunner = MigrationRunner_1 = class MigrationRunner {
    dataSource;
    logger = new common_1.Logger(MigrationRunner_1.name);
    constructor(dataSource) {
        this.dataSource = dataSource;
    }
    async onModuleInit() {
        const lockHolder = this.dataSource.createQueryRunner();
        await lockHolder.connect();
        try {
            await lockHolder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
            const applied = await this.dataSource.runMigrations({ transaction: 'each' });
            for (const migration of applied)
                this.logger.log(`applied migration ${migration.name}`);
        }
        finally {
            await lockHolder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
            await lockHolder.release();
        }
    }
};
exports.MigrationRunner = MigrationRunner;
exports.MigrationRunner = MigrationRunner = MigrationRunner_1 = __decorate([
    (0, common_1.Injectable)(),
    __metadata("design:paramtypes", [typeorm_1.DataSource])
], MigrationRunner);
//# sourceMappingURL=migration.runner.js.map