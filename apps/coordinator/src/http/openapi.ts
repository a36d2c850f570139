import type { OpenAPIObject } from '@nestjs/swagger';

/**
 * The HTTP API, described by hand: the request parsers in @nest-durable/client's contract are the single source of
 * validation, so this document mirrors them rather than being generated from decorators.
 */
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const id = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } } as const;
const deadLetterId = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[1-9][0-9]*$' } } as const;
const errors = {
  '400': { description: 'Invalid request (nothing changed)', ...json(ref('Error')) },
  '401': { description: 'Missing or wrong bearer token', ...json(ref('Error')) },
  '404': { description: 'Run not found', ...json(ref('Error')) },
  '409': { description: 'Conflict with the run\'s state (nothing changed)', ...json(ref('Error')) },
  '415': { description: 'A body that is not JSON (nothing changed)', ...json(ref('Error')) },
};
const revisioned = (extra: Record<string, object> = {}, required: string[] = []) =>
  json({ type: 'object', required: ['expectedRevision', ...required], properties: { expectedRevision: { type: 'integer' }, ...extra } });

export const OPENAPI_DOCUMENT: OpenAPIObject = {
  openapi: '3.0.3',
  info: {
    title: 'nest-durable-workflows coordinator',
    version: '1',
    description:
      'Client API (bearer CLIENT_TOKEN) to start, inspect, wait for and control runs; worker protocol (bearer WORKER_TOKEN). ' +
      'Every error is {statusCode, error, reason, message}.',
  },
  components: {
    securitySchemes: { client: { type: 'http', scheme: 'bearer' }, worker: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Error: {
        type: 'object',
        properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, reason: { type: 'string' }, message: { type: 'string' } },
      },
      StartRun: {
        type: 'object',
        required: ['workflow', 'version'],
        additionalProperties: false,
        properties: {
          workflow: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' },
          version: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' },
          input: { description: 'Any JSON (at most 1 MiB, no NUL characters)' },
          idempotencyKey: { type: 'string', maxLength: 255 },
          shard: { type: 'string' },
          priority: { type: 'integer', minimum: -1000, maximum: 1000 },
          runAt: { type: 'string', format: 'date-time' },
        },
      },
      Task: {
        type: 'object',
        properties: {
          key: { type: 'string' },
          kind: { type: 'string', enum: ['task', 'sleep', 'event', 'child', 'retry'] },
          name: { type: 'string' },
          status: { type: 'string', enum: ['completed', 'failed', 'waiting'] },
          attempts: { type: 'integer' },
          output: {},
          error: { type: 'object', nullable: true },
          createdAt: { type: 'string', format: 'date-time' },
        },
      },
      Run: {
        type: 'object',
        properties: {
          id: { type: 'string', format: 'uuid' },
          workflow: { type: 'string' },
          version: { type: 'string' },
          status: { type: 'string', enum: ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] },
          revision: { type: 'integer' },
          attempt: { type: 'integer' },
          priority: { type: 'integer' },
          input: {},
          output: {},
          error: { type: 'object', nullable: true },
          idempotencyKey: { type: 'string', nullable: true },
          shard: { type: 'string', nullable: true },
          parentId: { type: 'string', nullable: true },
          runAt: { type: 'string', format: 'date-time', nullable: true },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
          startedAt: { type: 'string', format: 'date-time', nullable: true },
          finishedAt: { type: 'string', format: 'date-time', nullable: true },
          tasks: { type: 'array', items: ref('Task') },
        },
      },
    },
  },
  paths: {
    '/v1/runs': {
      post: {
        tags: ['runs'],
        security: [{ client: [] }],
        summary: 'Start a run (an existing idempotency key returns the existing run with 200)',
        requestBody: { required: true, ...json(ref('StartRun')) },
        responses: { '201': { description: 'Started', ...json(ref('Run')) }, '200': { description: 'Existing run', ...json(ref('Run')) }, ...errors },
      },
      get: {
        tags: ['runs'],
        security: [{ client: [] }],
        summary: 'List runs, newest first',
        parameters: ['workflow', 'status', 'limit', 'cursor'].map((name) => ({ name, in: 'query', schema: { type: 'string' } })),
        responses: {
          '200': { description: 'A page', ...json({ type: 'object', properties: { runs: { type: 'array', items: ref('Run') }, nextCursor: { type: 'string', nullable: true } } }) },
          ...errors,
        },
      },
    },
    '/v1/runs/batch': {
      post: {
        tags: ['runs'],
        security: [{ client: [] }],
        summary: 'Start up to 1,000 runs in one transaction',
        requestBody: { required: true, ...json({ type: 'object', properties: { runs: { type: 'array', items: ref('StartRun') } } }) },
        responses: { '201': { description: 'Runs, in request order', ...json({ type: 'object', properties: { runs: { type: 'array', items: ref('Run') } } }) }, ...errors },
      },
    },
    '/v1/runs/{id}': {
      get: { tags: ['runs'], security: [{ client: [] }], summary: 'A run with its tasks', parameters: [id], responses: { '200': { description: 'The run', ...json(ref('Run')) }, ...errors } },
    },
    '/v1/runs/{id}/result': {
      get: {
        tags: ['runs'],
        security: [{ client: [] }],
        summary: 'Wait up to waitMs (0-60000) for the run to be terminal, then return it',
        parameters: [id, { name: 'waitMs', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 60000 } }],
        responses: { '200': { description: 'The run', ...json(ref('Run')) }, ...errors },
      },
    },
    '/v1/runs/{id}/cancel': {
      post: { tags: ['runs'], security: [{ client: [] }], summary: 'Cancel the run and its unfinished children', parameters: [id], responses: { '200': { description: 'Cancelled', ...json(ref('Run')) }, ...errors } },
    },
    '/v1/runs/{id}/events/{name}': {
      post: {
        tags: ['runs'],
        security: [{ client: [] }],
        summary: 'Deliver an event (kept for a later wait if the run is not waiting for it)',
        parameters: [id, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: json({ type: 'object', properties: { data: {} } }),
        responses: { '202': { description: 'Accepted', ...json({ type: 'object', properties: { delivered: { type: 'boolean' } } }) }, ...errors },
      },
    },
    '/v1/runs/{id}/wake': {
      post: { tags: ['runs'], security: [{ client: [] }], summary: 'End a durable sleep now', parameters: [id], responses: { '200': { description: 'The run', ...json(ref('Run')) }, ...errors } },
    },
    '/v1/runs/{id}/retry': {
      post: { tags: ['runs'], security: [{ client: [] }], summary: 'Run a failed run again as its next attempt', parameters: [id], responses: { '200': { description: 'The run', ...json(ref('Run')) }, ...errors } },
    },
    '/v1/worker/claims': {
      post: {
        tags: ['worker protocol'],
        security: [{ worker: [] }],
        summary: 'Claim ready runs (long-polls up to waitMs)',
        requestBody: json({ type: 'object', properties: { workerId: { type: 'string' }, workflows: { type: 'array', items: { type: 'object' } }, limit: { type: 'integer' }, waitMs: { type: 'integer' } } }),
        responses: { '200': { description: '{runs}' }, ...errors },
      },
    },
    '/v1/worker/takes': {
      post: {
        tags: ['worker protocol'],
        security: [{ worker: [] }],
        summary: 'Take up to `count` runs of each workflow version for wake-ups a transport delivered (chosen as a claim chooses)',
        requestBody: json({ type: 'object', properties: { workerId: { type: 'string' }, workflows: { type: 'array', items: { type: 'object' } } } }),
        responses: { '200': { description: '{runs}' }, ...errors },
      },
    },
    '/v1/worker/dead-letters': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Hand over a Streams wake-up delivered too often', responses: { '200': { description: '{deadLetterId, runFailed}' }, ...errors } },
    },
    '/v1/dead-letters': {
      get: { tags: ['dead letters'], security: [{ client: [] }], summary: 'What dispatch gave up on, newest first', responses: { '200': { description: '{deadLetters, nextCursor}' }, ...errors } },
    },
    '/v1/dead-letters/{id}/redrive': {
      post: { tags: ['dead letters'], security: [{ client: [] }], summary: 'Put its run back in motion and remove it', parameters: [deadLetterId], responses: { '200': { description: '{action, runStatus}' }, ...errors } },
    },
    '/v1/dead-letters/{id}': {
      delete: { tags: ['dead letters'], security: [{ client: [] }], summary: 'Remove it', parameters: [deadLetterId], responses: { '204': { description: 'Removed' }, ...errors } },
    },
    '/v1/worker/heartbeats': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Refresh claims; returns the runs no longer held', responses: { '200': { description: '{lost}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/tasks': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Record a task result (first one wins)', parameters: [id], requestBody: revisioned(), responses: { '200': { description: '{task}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/complete': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Complete the run', parameters: [id], requestBody: revisioned({ output: {} }), responses: { '200': { description: '{revision}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/fail': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Fail the run, or retry it later', parameters: [id], requestBody: revisioned({ error: { type: 'object' }, retryDelayMs: { type: 'integer' } }, ['error']), responses: { '200': { description: '{revision}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/suspend': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Suspend at a sleep, event or retry step', parameters: [id], requestBody: revisioned(), responses: { '200': { description: '{suspended, task}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/children': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Start a child run (optionally wait for it), in the parent\'s shard unless `shard` names one (null: none)', parameters: [id], requestBody: revisioned(), responses: { '200': { description: '{suspended, task}' }, ...errors } },
    },
    '/v1/worker/runs/{id}/release': {
      post: { tags: ['worker protocol'], security: [{ worker: [] }], summary: 'Give the run back to other workers', parameters: [id], requestBody: revisioned(), responses: { '200': { description: '{revision}' }, ...errors } },
    },
    '/health/live': { get: { tags: ['operations'], summary: 'Liveness', responses: { '200': { description: 'Up' } } } },
    '/health/ready': { get: { tags: ['operations'], summary: 'Readiness (PostgreSQL, LISTEN, Redis, outbox)', responses: { '200': { description: 'Up or degraded' }, '503': { description: 'Down' } } } },
    '/metrics': { get: { tags: ['operations'], summary: 'Prometheus metrics', responses: { '200': { description: 'Text format' } } } },
  },
};
