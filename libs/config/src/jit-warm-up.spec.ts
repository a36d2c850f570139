import { describe, expect, it, jest } from '@jest/globals';

import { INTERRUPT_BUDGET, optimiseHotCodeSooner } from './jit-warm-up';

describe('optimiseHotCodeSooner', () => {
  it("lowers V8's interrupt budget", () => {
    const setFlagsFromString = jest.fn();
    optimiseHotCodeSooner([], setFlagsFromString, '11.3.244.8');
    expect(setFlagsFromString).toHaveBeenCalledWith(`--interrupt-budget=${INTERRUPT_BUDGET}`);
  });

  it('leaves a budget given on the command line as it is', () => {
    const setFlagsFromString = jest.fn();
    optimiseHotCodeSooner(['--interrupt-budget=100000'], setFlagsFromString, '11.3.244.8');
    optimiseHotCodeSooner(['--interrupt_budget=100000'], setFlagsFromString, '11.3.244.8');
    expect(setFlagsFromString).not.toHaveBeenCalled();
  });

  it('leaves a V8 other than the one it was measured on (11, Node 20) as it is', () => {
    const setFlagsFromString = jest.fn();
    optimiseHotCodeSooner([], setFlagsFromString, '12.4.254.21');
    expect(setFlagsFromString).not.toHaveBeenCalled();
  });
});
