import { SetMetadata } from '@nestjs/common';

/** Who may call a controller's routes: clients (CLIENT_TOKEN), workers (WORKER_TOKEN), or anyone. */
export type Audience = 'client' | 'worker' | 'public';

export const AUDIENCE = 'wf:audience';

/** Marks a controller (or route) with the token it requires. Routes without it are refused. */
export const Audience = (audience: Audience) => SetMetadata(AUDIENCE, audience);
