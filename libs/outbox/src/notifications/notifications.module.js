"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var NotificationsModule_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.NotificationsModule = void 0;
const common_1 = require("@nestjs/common");
const terminus_1 = require("@nestjs/terminus");
const notification_constants_1 = require("./notification.constants");
const notification_listener_health_1 = require("./notification-listener.health");
const notification_listener_service_1 = require("./notification-listener.service");
let NotificationsModule = NotificationsModule_1 = class NotificationsModule {
    static forRootAsync(options) {
        return {
            module: NotificationsModule_1,
            global: true,
            imports: [...(options.imports ?? []), terminus_1.TerminusModule],
            providers: [
                { provide: notification_constants_1.NOTIFICATION_LISTENER_OPTIONS, useFactory: options.useFactory, inject: options.inject },
                notification_listener_service_1.NotificationListener,
                notification_listener_health_1.NotificationListenerHealth,
            ],
            exports: [notification_listener_service_1.NotificationListener, notification_listener_health_1.NotificationListenerHealth],
        };
    }
};
exports.NotificationsModule = NotificationsModule;
exports.NotificationsModule = NotificationsModule = NotificationsModule_1 = __decorate([
    (0, common_1.Module)({})
], NotificationsModule);
//# sourceMappingURL=notifications.module.js.map