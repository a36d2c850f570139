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
exports.NotificationListenerHealth = void 0;
const common_1 = require("@nestjs/common");
const terminus_1 = require("@nestjs/terminus");
const notification_listener_service_1 = require("./notification-listener.service");
/** Down while the LISTEN session is reconnecting: long-polls then fall back to their poll interval. */
let NotificationListenerHealth = class NotificationListenerHealth {
    listener;
    health;
    constructor(listener, health) {
        this.listener = listener;
        this.health = health;
    }
    isHealthy(key = 'listen') {
        const indicator = this.health.check(key);
        return this.listener.isListening ? indicator.up() : indicator.down({ message: 'LISTEN session is reconnecting' });
    }
};
exports.NotificationListenerHealth = NotificationListenerHealth;
exports.NotificationListenerHealth = NotificationListenerHealth = __decorate([
    (0, common_1.Injectable)(),
    __metadata("design:paramtypes", [notification_listener_service_1.NotificationListener,
        terminus_1.HealthIndicatorService])
], NotificationListenerHealth);
//# sourceMappingURL=notification-listener.health.js.map