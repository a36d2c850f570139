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
exports.Database = void 0;
const common_1 = require("@nestjs/common");
const typeorm_1 = require("typeorm");
/**
 * Plain parameterised SQL on the pool TypeORM opened. The statements that matter for
 * correctness and speed (claim, revision-checked writes) go through here so each is one
 * visible round trip; the ORM serves everything else.
 */
let Database = class Database {
    dataSource;
    constructor(dataSource) {
        this.dataSource = dataSource;
    }
    get pool() {
        return this.dataSource.driver.master;
    }
    async query(text, values = []) {
        const result = await this.pool.query(text, values);
        return result.rows;
    }
    /** Runs `work` in one transaction on one connection; rolls back if it throws. */
    async transaction(work) {
        const client = await this.pool.connect();
        try {
            await client.query('BEGIN');
            const result = await work(client);
            await client.query('COMMIT');
            return result;
        }
        catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
        }
        finally {
            client.release();
        }
    }
};
exports.Database = Database;
exports.Database = Database = __decorate([
    (0, common_1.Injectable)(),
    __metadata("design:paramtypes", [typeorm_1.DataSource])
], Database);
//# sourceMappingURL=database.js.map