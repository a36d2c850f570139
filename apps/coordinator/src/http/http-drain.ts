import { BeforeApplicationShutdown, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';

/**
 * Counts requests, and lets the HTTP server drain on shutdown. Workers poll over keep-alive connections without pause,
 * so a connection would never go idle and the server would never finish closing: once shutdown
 * begins every response says `Connection: close`, and idle connections are closed at once.
 */
@Injectable()
export class HttpDrain implements OnModuleInit, BeforeApplicationShutdown {
  private draining = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: CoordinatorMetrics,
  ) {}

  onModuleInit(): void {
    (this.adapterHost.httpAdapter.getInstance() as FastifyInstance).addHook('onRequest', this.onRequest);
  }

  beforeApplicationShutdown(): void {
    this.draining = true;
    this.adapterHost.httpAdapter?.getHttpServer()?.closeIdleConnections?.();
  }

  private readonly onRequest = (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    this.metrics.httpRequests.inc();
    // On the raw response, so that the streamed ones (the feed) say it too.
    if (this.draining) reply.raw.setHeader('connection', 'close');
    done();
  };
}
