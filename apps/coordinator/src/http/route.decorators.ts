import { decode, decodeQuery, type Endpoint } from '@nest-durable/common';
import { applyDecorators, createParamDecorator, type ExecutionContext, HttpCode, RequestMapping, RequestMethod, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Audience } from '../auth/auth.decorators';

const ENDPOINT = 'wf:endpoint';
const METHODS = { get: RequestMethod.GET, post: RequestMethod.POST, put: RequestMethod.PUT, delete: RequestMethod.DELETE } as const;

/**
 * Serves a handler as one endpoint of the contract (`API` in @nest-durable/common): its path, method,
 * success status and audience are the entry's, the very entry the API description is built from.
 */
export function Route(endpoint: Endpoint): MethodDecorator {
  return applyDecorators(
    RequestMapping({ path: endpoint.path.replace(/\{(\w+)\}/g, ':$1'), method: METHODS[endpoint.method] }),
    HttpCode(endpoint.status),
    Audience(endpoint.audience),
    SetMetadata(ENDPOINT, endpoint),
  );
}

/**
 * The input of a @Route handler, validated and decoded by its endpoint's schemas: path parameters, then the
 * query, then the body (the first refusal is the answer, a 400 with its reason; nothing was read or changed).
 */
export const Input = createParamDecorator((_data: unknown, context: ExecutionContext): Record<'params' | 'query' | 'body', unknown> => {
  const endpoint = Reflect.getMetadata(ENDPOINT, context.getHandler()) as Endpoint | undefined;
  if (!endpoint) throw new Error(`${context.getClass().name}.${context.getHandler().name} reads @Input() but is not a @Route`);
  const request = context.switchToHttp().getRequest<FastifyRequest>();
  const params = endpoint.params && decode(endpoint.params, request.params, 'path');
  const query = endpoint.query && decodeQuery(endpoint.query, request.query as Record<string, unknown>);
  const body = endpoint.body && decode(endpoint.body, request.body === undefined && endpoint.bodyOptional ? {} : request.body, 'request body');
  return { params, query, body };
});
