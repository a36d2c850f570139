import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';

/** One of the app's own services (accounts and mail, in memory here): what the welcome workflow's tasks call. */
@Injectable()
export class AccountsService {
  createAccount(email: string): string {
    return `acct-${createHash('sha256').update(email).digest('hex').slice(0, 12)}`;
  }

  sendWelcomeMail(email: string, accountId: string): string {
    return this.sendMail(email, `welcome, ${accountId}`);
  }

  sendMail(email: string, text: string): string {
    return `mail to ${email}: ${text}`;
  }
}
