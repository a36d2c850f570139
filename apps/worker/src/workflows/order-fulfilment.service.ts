import { Injectable } from '@nestjs/common';

/**
 * What order-processing's tasks call: stands in for the inventory, payment and shipping systems an app would have
 * (each answers an id made from the order's). A service of the app like any other, injected into the workflow class.
 */
@Injectable()
export class OrderFulfilment {
  async reserve(orderId: string): Promise<{ reservationId: string }> {
    return { reservationId: `res-${orderId}` };
  }

  async charge(orderId: string): Promise<{ paymentId: string }> {
    return { paymentId: `pay-${orderId}` };
  }

  async ship(orderId: string): Promise<{ trackingNumber: string }> {
    return { trackingNumber: `trk-${orderId}` };
  }
}
