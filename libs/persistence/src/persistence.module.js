"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var PersistenceModule_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.PersistenceModule = exports.MIGRATIONS = exports.ENTITIES = void 0;
const common_1 = require("@nestjs/common");
const typeorm_1 = require("@nestjs/typeorm");
const database_1 = require("./database");
const run_transition_entity_1 = require("./entities/run-transition.entity");
const run_entity_1 = require("./entities/run.entity");
const task_entity_1 = require("./entities/task.entity");
const migration_runner_1 = require("./migration.runner");
const _1764500000000_initial_schema_1 = require("./migrations/1764500000000-initial-schema");
exports.ENTITIES = [run_entity_1.RunEntity, task_entity_1.TaskEntity, run_transition_entity_1.RunTransitionEntity];
exports.MIGRATIONS = [_1764500000000_initial_schema_1.InitialSchema1764500000000];
/** The coordinator's PostgreSQL: TypeORM entities, migrations applied at start, and plain SQL access. */
let PersistenceModule = PersistenceModule_1 = class PersistenceModule {
    static forRootAsync(options) {
        return {
            module: PersistenceModule_1,
            global: true,
            imports: [
                typeorm_1.TypeOrmModule.forRootAsync({
                    imports: options.imports,
                    inject: options.inject,
                    useFactory: async (...args) => {
                        const { url, poolSize } = await options.useFactory(...args);
                        return {
                            type: 'postgres',
                            url,
                            entities: exports.ENTITIES,
                            migrations: exports.MIGRATIONS,
                            migrationsRun: false,
                            synchronize: false,
                            extra: { max: poolSize, connectionTimeoutMillis: 10_000 },
                        };
                    },
                }),
                typeorm_1.TypeOrmModule.forFeature(exports.ENTITIES),
            ],
            providers: [database_1.Database, migration_runner_1.MigrationRunner],
            exports: [typeorm_1.TypeOrmModule, database_1.Database],
        };
    }
};
exports.PersistenceModule = PersistenceModule;
exports.PersistenceModule = PersistenceModule = PersistenceModule_1 = __decorate([
    (0, common_1.Module)({})
], PersistenceModule);
//# sourceMappingURL=persistence.module.js.map