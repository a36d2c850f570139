import { Module } from '@nestjs/common';
import { FeedController } from './feed.controller';
import { FeedWatchersRepository } from './feed-watchers.repository';
import { FeedService } from './feed.service';

/** GET /v1/feed. */
@Module({
  controllers: [FeedController],
  providers: [FeedService, FeedWatchersRepository],
  exports: [FeedService],
})
export class FeedModule {}
