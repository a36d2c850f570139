import { defineWorkflow } from '@nest-durable/workflow';

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

/** Three checkpointed steps: reserve inventory, charge the payment, ship. */
export const orderProcessingWorkflow = defineWorkflow<OrderInput, OrderOutput>({
  name: 'order-processing',
  version: '1.0.0',
  handler: async (ctx, input) => {
    const reservation = await ctx.task('reserve-inventory', () => ({ reservationId: `res-${input.orderId}` }));
    const payment = await ctx.task('charge-payment', () => ({ paymentId: `pay-${input.orderId}` }));
    const shipment = await ctx.task('ship-order', () => ({ trackingNumber: `trk-${input.orderId}` }));
    return { orderId: input.orderId, status: 'shipped', ...reservation, ...payment, ...shipment };
  },
});
