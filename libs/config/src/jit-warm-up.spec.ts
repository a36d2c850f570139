import { describe, expect, it, jest } from '@jest/globals';

import { INTERRUPT_BUDGET, optimiseHotCodeSooner } from './jit-warm-up';

describe('optimiseHotCodeSooner', () => {
  it("lowers V8's interrupt budget", () => {
    const setFlagsFromString = jest.fn();
    optimiseHotCodeSooner([], setFlagsFromString);
    expect(setFlagsFromString).toHaveBeenCalledWith(`--interrupt-budget=${INTERRUPT_BUDGET}`);
  });

  it('leaves a budget given on the command line as it is', () => {
    const setFlagsFromString = jest.fn();
    optimiseHotCodeSooner(['--interrupt-budget=100000'], setFlagsFromString);
    optimiseHotCodeSooner(['--interrupt_budget=100000'], setFlagsFromString);
    expect(setFlagsFromString).not.toHaveBeenCalled();
  });
});
