import { addRunWeeks, Database, RUN_TABLES, runWeeksEnd } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** The run tables' weekly partitions (libs/persistence/src/sql/run-weeks.sql.ts). */
@Injectable()
export class RunWeeksRepository {
  constructor(private readonly db: Database) {}

  /** Makes `table`'s weeks until one covers `through`, in a transaction of its own; returns how many it made. */
  addWeeks(table: (typeof RUN_TABLES)[number], through: Date): Promise<number> {
    return this.db.transaction((tx) => addRunWeeks(tx, table, through));
  }

  /** Where the weeks made end (the earliest over the run tables). */
  weeksEnd(): Promise<Date> {
    return runWeeksEnd(this.db);
  }
}
