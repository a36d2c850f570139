import { Module } from '@nestjs/common';
import { WorkersController } from './workers.controller';
import { WorkersRepository } from './workers.repository';
import { WorkersService } from './workers.service';

@Module({
  controllers: [WorkersController],
  providers: [WorkersRepository, WorkersService],
  exports: [WorkersService],
})
export class WorkersModule {}
