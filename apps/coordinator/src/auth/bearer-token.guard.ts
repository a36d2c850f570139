import { UnauthorizedError } from '@nest-durable/common';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { AUDIENCE, type Audience } from './auth.decorators';

/**
 * Checks `Authorization: Bearer <token>` against the token of the route's audience before any
 * handler (and so any database work) runs. Tokens are compared in constant time (as SHA-256
 * digests, so their lengths do not leak either). A route that declares no audience is refused.
 */
@Injectable()
export class BearerTokenGuard implements CanActivate {
  private readonly digests: Record<'client' | 'worker', Buffer | undefined>;

  constructor(
    private readonly reflector: Reflector,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {
    this.digests = { client: digest(config.clientToken), worker: digest(config.workerToken) };
  }

  canActivate(context: ExecutionContext): boolean {
    const audience = this.reflector.getAllAndOverride<Audience | undefined>(AUDIENCE, [context.getHandler(), context.getClass()]);
    if (audience === 'public' || this.config.authDisabled) return true;
    const expected = audience ? this.digests[audience] : undefined;
    const header = context.switchToHttp().getRequest<Pick<IncomingMessage, 'headers'>>().headers.authorization ?? '';
    const presented = /^Bearer (.+)$/i.exec(header)?.[1];
    if (!expected || !presented || !timingSafeEqual(digest(presented)!, expected)) {
      throw new UnauthorizedError(audience ?? 'known');
    }
    return true;
  }
}

function digest(token: string | undefined): Buffer | undefined {
  return token === undefined ? undefined : createHash('sha256').update(token).digest();
}
