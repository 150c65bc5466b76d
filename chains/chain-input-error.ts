/**
 * Bad partner input to a chain function: a malformed address, amount, transaction or signature, a missing or
 * contradictory field. The API answers it with 400 INVALID_REQUEST and `message`, which names the problem in a partner's
 * words, once it has put `field` in the request's terms; its own code is not a catalogued one, so one that escapes
 * unanswered (the service's fault, such as a signature that cannot be attached) answers 500.
 *
 * `field` is the path of the offending value inside the input the function received (`chainId`,
 * `types.EIP712Domain`, `message.to.wallet`); for a function taking a plain string it is the name of the request
 * body field that string comes from (`message`, `transaction`, `networkPassphrase`).
 */
import { CodedError } from './domain/errors.ts';
export class ChainInputError extends CodedError {
  override readonly name = 'ChainInputError';
  readonly field: string | undefined;

  constructor(message: string, field?: string) {
    super('CHAIN_INPUT_INVALID', 400, message);
    this.field = field;
  }
}
