// Every test file: Nest's static Logger (used by units tested without an app) logs into the captured
// lines too, shown only for a failing test.
import { Logger } from '@nestjs/common';
import { capturedLogger } from './captured-logs';

Logger.overrideLogger(capturedLogger);
