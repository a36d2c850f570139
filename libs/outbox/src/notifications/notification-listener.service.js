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
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
var NotificationListener_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.NotificationListener = void 0;
const common_1 = require("@nestjs/common");
const pg_1 = require("pg");
const notification_constants_1 = require("./notification.constants");
const PROBE_TIMEOUT_MS = 5_000;
const MAX_RECONNECT_DELAY_MS = 5_000;
/**
 * Holds one dedicated PostgreSQL session on LISTEN and hands notifications to in-process waiters.
 *
 * NOTIFY is delivered only at commit and never replayed after a reconnect, so every (re)connect
 * wakes all waiters: they re-check the database and a lost notification costs a query, never a
 * stuck wait. A half-open socket can stay silent without an error, so the session is probed with a
 * round trip and replaced when the probe fails.
 */
let NotificationListener = NotificationListener_1 = class NotificationListener {
    options;
    logger = new common_1.Logger(NotificationListener_1.name);
    waiters = new Map();
    client;
    connected = false;
    stopped = false;
    reconnectDelayMs = 100;
    probeTimer;
    reconnectTimer;
    constructor(options) {
        this.options = options;
    }
    async onModuleInit() {
        await this.connect();
        this.probeTimer = setInterval(() => void this.probe(), this.options.probeIntervalMs);
        this.probeTimer.unref();
    }
    async onApplicationShutdown() {
        this.stopped = true;
        clearInterval(this.probeTimer);
        clearTimeout(this.reconnectTimer);
        this.wakeAll(false);
        await this.client?.end().catch(() => undefined);
    }
    /** Whether the LISTEN session is currently up (for health checks). */
    get isListening() {
        return this.connected;
    }
    /**
     * Waits up to `timeoutMs` for a notification on `channel` whose payload matches. Arm the wait
     * before checking the database, then await it only if the check found nothing: a notification
     * that lands between the two is not missed.
     */
    waitFor(channel, matches, timeoutMs) {
        let waiter;
        let timer;
        const set = this.waitersOf(channel);
        const notified = new Promise((resolve) => {
            waiter = {
                matches,
                wake: (value) => {
                    clearTimeout(timer);
                    set.delete(waiter);
                    resolve(value);
                },
            };
        });
        if (this.stopped) {
            waiter.wake(false);
        }
        else {
            set.add(waiter);
            timer = setTimeout(() => waiter.wake(false), timeoutMs);
        }
        return { notified, cancel: () => waiter.wake(false) };
    }
    waitersOf(channel) {
        let set = this.waiters.get(channel);
        if (!set) {
            set = new Set();
            this.waiters.set(channel, set);
        }
        return set;
    }
    dispatch(channel, payload) {
        for (const waiter of [...(this.waiters.get(channel) ?? [])]) {
            if (waiter.matches(payload))
                waiter.wake(true);
        }
    }
    wakeAll(value) {
        for (const set of this.waiters.values()) {
            for (const waiter of [...set])
                waiter.wake(value);
        }
    }
    async connect() {
        const client = new pg_1.Client({ connectionString: this.options.url, keepAlive: true });
        client.on('notification', (message) => this.dispatch(message.channel, message.payload ?? ''));
        client.on('error', (error) => this.lost(client, error));
        client.on('end', () => this.lost(client, new Error('connection ended')));
        this.client = client;
        try {
            await client.connect();
            for (const channel of this.options.channels) {
                await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
            }
        }
        catch (error) {
            this.lost(client, error);
            return;
        }
        if (client !== this.client)
            return;
        this.connected = true;
        this.reconnectDelayMs = 100;
        // Anything committed while we were not listening went unannounced: let every waiter re-check.
        this.wakeAll(true);
    }
    lost(client, error) {
        if (client !== this.client || this.stopped)
            return;
        this.client = undefined;
        this.connected = false;
        this.logger.warn(`LISTEN session lost (${error.message}); reconnecting in ${this.reconnectDelayMs} ms`);
        client.removeAllListeners('end');
        client.on('error', () => undefined);
        void client.end().catch(() => undefined);
        this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectDelayMs);
        this.reconnectTimer.unref();
        this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, MAX_RECONNECT_DELAY_MS);
    }
    async probe() {
        const client = this.client;
        if (!client || !this.connected)
            return;
        let timer;
        try {
            await Promise.race([
                client.query('SELECT 1'),
                new Promise((_, reject) => {
                    timer = setTimeout(() => reject(new Error(`probe got no answer in ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
                }),
            ]);
        }
        catch (error) {
            this.lost(client, error);
        }
        finally {
            clearTimeout(timer);
        }
    }
};
exports.NotificationListener = NotificationListener;
exports.NotificationListener = NotificationListener = NotificationListener_1 = __decorate([
    (0, common_1.Injectable)(),
    __param(0, (0, common_1.Inject)(notification_constants_1.NOTIFICATION_LISTENER_OPTIONS)),
    __metadata("design:paramtypes", [Object])
], NotificationListener);
//# sourceMappingURL=notification-listener.service.js.map