/**
 * Bad partner input to a chain function: a malformed address, amount, transaction or signature, a missing or
 * contradictory field. The API answers it with 400 and `message`, which names the problem in a partner's words.
 *
 * `field` is the path of the offending value inside the input the function received (`chainId`,
 * `types.EIP712Domain`, `message.to.wallet`); for a function taking a plain string it is the name of the request
 * body field that string comes from (`message`, `transaction`, `networkPassphrase`).
 */
export class ChainInputError extends Error {
  override readonly name = 'ChainInputError';
  readonly field: string | undefined;

  constructor(message: string, field?: string) {
    super(message);
    this.field = field;
  }
}
