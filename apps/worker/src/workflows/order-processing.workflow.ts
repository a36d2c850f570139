import { Workflow } from '@nest-durable/worker';
import type { WorkflowContext } from '@nest-durable/workflow';
import { OrderFulfilment } from './order-fulfilment.service';

export interface OrderInput {
  orderId: string;
}

export interface OrderOutput {
  orderId: string;
  status: 'shipped';
  reservationId: string;
  paymentId: string;
  trackingNumber: string;
}

/** Three checkpointed steps, each a call to the injected OrderFulfilment: reserve inventory, charge the payment, ship. */
@Workflow({ name: 'order-processing', version: '1.0.0' })
export class OrderProcessingWorkflow {
  constructor(private readonly fulfilment: OrderFulfilment) {}

  async run(ctx: WorkflowContext, input: OrderInput): Promise<OrderOutput> {
    const reservation = await ctx.task('reserve-inventory', () => this.fulfilment.reserve(input.orderId));
    const payment = await ctx.task('charge-payment', () => this.fulfilment.charge(input.orderId));
    const shipment = await ctx.task('ship-order', () => this.fulfilment.ship(input.orderId));
    return { orderId: input.orderId, status: 'shipped', ...reservation, ...payment, ...shipment };
  }
}
