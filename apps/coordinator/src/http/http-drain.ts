import { BeforeApplicationShutdown, Injectable, NestMiddleware } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/**
 * Counts requests, and lets the HTTP server drain on shutdown. Workers poll over keep-alive connections without pause,
 * so a connection would never go idle and the server would never finish closing: once shutdown
 * begins every response says `Connection: close`, and idle connections are closed at once.
 */
@Injectable()
export class HttpDrain implements BeforeApplicationShutdown, NestMiddleware {
  private draining = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: CoordinatorMetrics,
  ) {}

  beforeApplicationShutdown(): void {
    this.draining = true;
    (this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined)?.closeIdleConnections?.();
  }

  use(_request: Request, response: Response, next: NextFunction): void {
    this.metrics.httpRequests.inc();
    if (this.draining) response.setHeader('connection', 'close');
    next();
  }
}
